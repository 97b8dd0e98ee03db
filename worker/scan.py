"""Which files under a root belong to the index: everything but hidden, ignored and tool folders.

Nothing here raises for one odd entry. A symbolic link whose target leaves the
root, a link loop and an entry that cannot be examined are listed all the same,
so that their job records why they are not indexed (a link out of the root is
never read). A name that is not valid UTF-8 cannot be stored in PostgreSQL or
sent as JSON: it is listed in an escaped, readable form (`caf\\xe9.md`) that
`locate` maps back to the file, and its job records it as failed.
"""

from __future__ import annotations

import dataclasses
import datetime
import os
import re
import stat as stat_module
from collections.abc import Iterator
from pathlib import Path

import pathspec
import structlog

log = structlog.get_logger("pgrecall.scan")

IGNORE_FILE = ".pgrecallignore"
# Hidden files and folders (.git, .obsidian, editor state) are skipped as well.
DEFAULT_IGNORED = [
    "node_modules/",
    "__pycache__/",
    "*~",
    "*.swp",
    "*.swx",
    "*.tmp",
    "4913",  # vim probes folder writability with this name
]

OUTSIDE_ROOT = "symbolic link leading out of the root"
ROOT_IS_A_LINK = "the root itself was replaced by a symbolic link: not followed"
UNDECODABLE_NAME = "file name is not valid UTF-8"


def load_ignore(root: Path) -> pathspec.PathSpec:
    patterns = list(DEFAULT_IGNORED)
    ignore_file = root / IGNORE_FILE
    try:
        if ignore_file.is_file():
            patterns.extend(ignore_file.read_text(encoding="utf-8", errors="replace").splitlines())
    except OSError as exc:
        log.warning("ignore_file_unreadable", path=str(ignore_file), error=exc.strerror or str(exc))
    return pathspec.PathSpec.from_lines("gitignore", patterns)


def is_hidden(relative_path: str) -> bool:
    return any(part.startswith(".") for part in relative_path.split("/"))


def is_undecodable(name: str) -> bool:
    """A name os.walk decoded with surrogate escapes: its bytes are not UTF-8."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def escape_name(name: str) -> str:
    """A readable UTF-8 form of a name that is not valid UTF-8: `caf\\xe9.md`."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


_ESCAPED_BYTE = re.compile(rb"\\x([0-9a-f]{2})")


def unescape_name(escaped: str) -> str | None:
    """The file name (with surrogate escapes) that `escape_name` turned into `escaped`, if any."""
    raw = _ESCAPED_BYTE.sub(lambda m: bytes([int(m.group(1), 16)]), escaped.encode("utf-8"))
    name = os.fsdecode(raw)
    return name if name != escaped and is_undecodable(name) else None


def is_ignored(relative_path: str, spec: pathspec.PathSpec) -> bool:
    """Hidden, ignored, or a name that is not valid UTF-8: the watcher leaves those to the scan,
    which lists them escaped (so they are recorded, not lost)."""
    if is_undecodable(relative_path):
        return True
    return is_hidden(relative_path) or spec.match_file(relative_path)


@dataclasses.dataclass(frozen=True)
class Entry:
    """What is at a path of a root, as the index sees it."""

    relative: str  # as stored: escaped when the name is not valid UTF-8
    stat: os.stat_result | None  # of the file; of the link itself when it is not followed
    problem: str | None = None  # why it is not read; None for a file to index
    real_path: str | None = None  # the resolved file to read, inside the root

    @property
    def size_and_mtime(self) -> tuple[int | None, datetime.datetime | None]:
        if self.stat is None:
            return None, None
        return self.stat.st_size, mtime_of(self.stat)


def _inside(root_real: str, real: str) -> bool:
    return real == root_real or real.startswith(root_real.rstrip(os.sep) + os.sep)


def _is_link(path: str) -> bool:
    status = _lstat(path)
    return status is not None and stat_module.S_ISLNK(status.st_mode)


def _lstat(path: str) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except OSError:
        return None


def _examine(root_real: str, full: str, relative: str, *, folder_is_real: bool = False) -> Entry | None:
    """The entry at `full` (which may hold surrogate escapes); None when it is no file at all.

    `folder_is_real`: the folder holding it is a real folder inside the root (as
    os.walk, which does not follow links, finds it), so only the entry itself
    can be a link.
    """
    if is_undecodable(relative):
        return Entry(escape_name(relative), _lstat(full), UNDECODABLE_NAME)
    real = full
    if not folder_is_real or _is_link(full):
        try:
            real = os.path.realpath(full)
        except (OSError, RuntimeError, ValueError) as exc:
            return Entry(relative, _lstat(full), f"cannot read: {getattr(exc, 'strerror', None) or exc}")
    if not _inside(root_real, real):
        return Entry(relative, _lstat(full), OUTSIDE_ROOT) if os.path.lexists(full) else None
    try:
        status = os.stat(full)
    except (FileNotFoundError, NotADirectoryError):
        return None  # gone, or a dangling link
    except OSError as exc:  # a link loop (ELOOP), a name too long, no permission
        return Entry(relative, _lstat(full), f"cannot read: {exc.strerror or exc}")
    if not stat_module.S_ISREG(status.st_mode):
        return None  # a folder, a FIFO, a device: nothing to index
    return Entry(relative, status, None, real)


def locate(root: Path, relative: str) -> Entry | None:
    """The entry a job for `relative` finds; None when no file is there (it was deleted)."""
    if os.path.islink(root):  # a root replaced by a link after it was resolved: its target is not ours
        return Entry(relative, None, ROOT_IS_A_LINK)
    root_real = os.path.realpath(root)
    full = os.path.join(root, relative)
    if not os.path.lexists(full):
        original = unescape_name(relative)
        if original is None or not os.path.lexists(os.path.join(root, original)):
            return None
        full = os.path.join(root, original)
        relative = original
    return _examine(root_real, full, relative)


def iter_entries(root: Path, spec: pathspec.PathSpec | None = None) -> Iterator[Entry]:
    """The root's entries, sorted, without following links out of the root or raising for any one.
    A root that is itself a symbolic link (replaced by one after it was resolved, as a memory folder
    can be) has none: its target is some other folder."""
    if os.path.islink(root):
        log.warning("root_is_a_link", root=str(root), target=os.path.realpath(root))
        return
    root_real = os.path.realpath(root)
    spec = spec if spec is not None else load_ignore(Path(root_real))

    def unreadable_folder(exc: OSError) -> None:
        log.warning("folder_unreadable", path=escape_name(str(exc.filename)), error=exc.strerror or str(exc))

    for directory, dirnames, filenames in os.walk(root_real, onerror=unreadable_folder):
        relative_dir = os.path.relpath(directory, root_real).replace(os.sep, "/")
        prefix = "" if relative_dir == "." else relative_dir + "/"
        dirnames[:] = sorted(d for d in dirnames if not _ignored(prefix + d + "/", spec))
        for name in sorted(filenames):
            relative = prefix + name
            if _ignored(relative, spec):
                continue
            entry = _examine(root_real, os.path.join(directory, name), relative, folder_is_real=True)
            if entry is not None:
                yield entry


def _ignored(relative: str, spec: pathspec.PathSpec) -> bool:
    return is_ignored(escape_name(relative) if is_undecodable(relative) else relative, spec)


def iter_files(root: Path, spec: pathspec.PathSpec | None = None) -> Iterator[str]:
    """Relative POSIX paths of the root's files, sorted (see iter_entries)."""
    for entry in iter_entries(root, spec):
        yield entry.relative


_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def mtime_of(stat: os.stat_result) -> datetime.datetime:
    """The modification time at the microsecond precision PostgreSQL keeps, exactly."""
    return _EPOCH + datetime.timedelta(microseconds=stat.st_mtime_ns // 1000)


def stat_files(root: Path) -> dict[str, tuple[int | None, datetime.datetime | None]]:
    """relative path -> (size, mtime) of the root's files, as their job records them."""
    return {entry.relative: entry.size_and_mtime for entry in iter_entries(root)}
