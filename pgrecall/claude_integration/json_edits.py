"""A user's JSON settings file changed in place: read and edited first, then backed up and replaced atomically.

Every file of one set-up is read, parsed and edited before any is written, so malformed JSON
or a read-only file stops it with nothing written. Each file that changes is copied to
`<name>.pgrecall-backup-<UTC timestamp>` beside it, then replaced by a temporary file of the
same folder (its mode and owner, fsync, rename, fsync of the folder). A file that is a link
is written where the link points, so the link stays. Should a later file fail, the ones
already written get their old content back.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import secrets
import stat
from collections.abc import Callable, Iterable
from datetime import datetime
from pathlib import Path

from pgrecall.claude_integration.claude_setup import render
from pgrecall.errors import InvalidInput, PgRecallError, reason

NEW_FILE_MODE = 0o600  # Claude Code's files hold tokens and environment variables
NEW_FOLDER_MODE = 0o700


class SetupError(PgRecallError):
    """A settings file cannot be changed; nothing was written."""


@dataclasses.dataclass(frozen=True)
class Change:
    path: Path  # as the user knows it
    target: Path  # the file written: the path, or where its link points
    before: str | None  # the file's text; None when it does not exist
    after: str | None  # the text to write; None when nothing changes

    @property
    def changed(self) -> bool:
        return self.after is not None


@dataclasses.dataclass(frozen=True)
class Written:
    path: Path
    backup: Path | None  # None: the file was created


def plan(path: Path, edit: Callable[[object], dict], create: bool = True) -> Change:
    """What `edit` (dict in, dict out) makes of the JSON file at `path`; a missing file is `{}`
    when `create`, else left missing. SetupError names the file, and the line and column of bad JSON."""
    target = path.resolve() if path.is_symlink() else path
    try:
        raw = target.read_bytes()
    except FileNotFoundError:
        raw = None
    except OSError as exc:
        raise SetupError(f"{path}: cannot read it: {reason(exc)}; nothing written") from None
    if raw is None and not create:
        return Change(path, target, None, None)
    text, data = (None, {}) if raw is None else _load(path, raw)
    try:
        edited = edit(data)
    except InvalidInput as exc:
        raise SetupError(f"{path}: {exc}; nothing written") from None
    if raw is not None and edited == data:
        return Change(path, target, text, None)
    # An empty file is taken for `{}` and written as a new one would be.
    return Change(path, target, text, render(edited, text if text and text.strip() else None))


def _load(path: Path, raw: bytes) -> tuple[str, object]:
    try:
        text = raw.decode("utf-8")
        return text, json.loads(text) if text.strip() else {}
    except UnicodeDecodeError as exc:
        raise SetupError(f"{path}: not UTF-8 text (byte {exc.start}); nothing written") from None
    except json.JSONDecodeError as exc:
        raise SetupError(
            f"{path}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}; nothing written"
        ) from None


def apply(changes: Iterable[Change], now: datetime) -> list[Written]:
    """Write the changes that change something (backups stamped with `now`, UTC), all or none."""
    changes = [change for change in changes if change.changed]
    for change in changes:
        _check_writable(change)
    written: list[tuple[Change, Written]] = []
    for change in changes:
        try:
            written.append((change, _write(change, now)))
        except (OSError, SetupError) as exc:
            _undo(written)
            message = str(exc) if isinstance(exc, SetupError) else f"{change.path}: cannot write it: {reason(exc)}"
            if written:
                message += "; the files written before it were restored"
            elif not isinstance(exc, SetupError):
                message += "; nothing written"
            raise SetupError(message) from None
    return [done for _, done in written]


def _read_only(path: Path) -> bool:
    # No write bit counts as read-only even for root, whom os.access lets write anything.
    return not os.access(path, os.W_OK) or not stat.S_IMODE(path.stat().st_mode) & 0o222


def _check_writable(change: Change) -> None:
    if change.before is not None and _read_only(change.target):
        raise SetupError(f"{change.path}: the file is read-only; nothing written")
    folder = change.target.parent
    while not folder.exists():
        folder = folder.parent
    if _read_only(folder) or not os.access(folder, os.X_OK):
        raise SetupError(f"{change.path}: its folder {folder} is read-only; nothing written")


def _write(change: Change, now: datetime) -> Written:
    target = change.target
    if change.before is None:
        _make_folders(target.parent)
        if target.exists():
            raise SetupError(f"{change.path}: created by another program meanwhile; run the command again")
        _write_atomically(target, change.after, NEW_FILE_MODE, None)
        return Written(change.path, None)
    status = target.stat()
    backup = _backup(target, change.before.encode("utf-8"), now, status)
    # Claude Code rewrites its files while it runs: changed since we read it, ours would undo that.
    if target.read_bytes() != change.before.encode("utf-8"):
        backup.unlink()
        raise SetupError(f"{change.path}: changed by another program meanwhile; run the command again")
    try:
        _write_atomically(target, change.after, stat.S_IMODE(status.st_mode), status)
    except BaseException:
        backup.unlink()
        raise
    return Written(change.path, backup)


def _undo(written: list[tuple[Change, Written]]) -> None:
    for change, done in reversed(written):
        if done.backup is None:
            change.target.unlink(missing_ok=True)
            continue
        status = change.target.stat()
        _write_atomically(change.target, change.before, stat.S_IMODE(status.st_mode), status)
        done.backup.unlink()


def _make_folders(folder: Path) -> None:
    missing = []
    while not folder.exists():
        missing.append(folder)
        folder = folder.parent
    for path in reversed(missing):
        path.mkdir(mode=NEW_FOLDER_MODE)


def backup_path(target: Path, now: datetime, taken: Callable[[Path], bool] = os.path.lexists) -> Path:
    """`<name>.pgrecall-backup-<UTC timestamp>` beside `target`, with -2, -3... when that one is taken."""
    base = target.with_name(f"{target.name}.pgrecall-backup-{now:%Y%m%dT%H%M%SZ}")
    path, number = base, 1
    while taken(path):
        number += 1
        path = base.with_name(f"{base.name}-{number}")
    return path


def _backup(target: Path, data: bytes, now: datetime, status: os.stat_result) -> Path:
    path = backup_path(target, now)
    mode = stat.S_IMODE(status.st_mode)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    try:
        with os.fdopen(descriptor, "wb") as file:
            _keep_owner_and_mode(file.fileno(), mode, status)
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return path


def _keep_owner_and_mode(descriptor: int, mode: int, status: os.stat_result | None) -> None:
    if status is not None and (status.st_uid, status.st_gid) != (os.geteuid(), os.getegid()):
        # Not root: the new file is ours, as the one it replaces was ours to write.
        with contextlib.suppress(PermissionError):
            os.fchown(descriptor, status.st_uid, status.st_gid)
    os.fchmod(descriptor, mode)  # exactly the old mode, whatever the umask


def _write_atomically(target: Path, text: str, mode: int, status: os.stat_result | None) -> None:
    temporary = target.with_name(f".{target.name}.{secrets.token_hex(4)}.pgrecall-tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, NEW_FILE_MODE)
    try:
        with os.fdopen(descriptor, "wb") as file:
            _keep_owner_and_mode(file.fileno(), mode, status)
            file.write(text.encode("utf-8"))
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    folder = os.open(target.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)
