"""Copies of an archive root's files, kept when the source deletes them.

A file of an archive root (a root with `archive = true`, such as Claude Code's
session folder, whose transcripts Claude Code deletes after 30 days) is copied
under PGRECALL_HOME/archive/<root name>/<its path> each time it is indexed with
new content, so that the copy exists whenever the source vanishes, even while
pgrecall is not running. When the source deletes the file, its documents stay
in the index, marked archived (metadata `archived_at`, `archive_copy`); the copy
is the source of truth from then on, so the index can still be rebuilt from disk.
Deleting the copy removes the documents (at the next reconciliation).

Copies are written like memories: a private temporary file, fsync, rename,
fsync of the folder; files 0600 in folders 0700.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from pgrecall.worker.private_files import FOLDER_MODE, write_atomically


def copy_path(folder: Path, relative: str) -> Path | None:
    """Where the copy of the root's file `relative` lives; None for a path that would leave the folder."""
    parts = PurePosixPath(relative).parts
    if not parts or any(part in ("", ".", "..") for part in parts) or PurePosixPath(relative).is_absolute():
        return None
    return folder.joinpath(*parts)


def has_copy(folder: Path, relative: str) -> bool:
    target = copy_path(folder, relative)
    return target is not None and target.is_file() and not target.is_symlink()


def keep(folder: Path, relative: str, data: bytes) -> Path | None:
    """Write `data` as the copy of `relative`, atomically and privately, unless an
    identical copy is there already; returns the copy's path (None for a path outside)."""
    target = copy_path(folder, relative)
    if target is None:
        return None
    if _holds(target, data):
        return target
    _private_folders(folder, target.parent)
    write_atomically(target, data)
    return target


def _holds(target: Path, data: bytes) -> bool:
    return (
        target.is_file()
        and not target.is_symlink()
        and target.stat().st_size == len(data)
        and target.read_bytes() == data
    )


def _private_folders(folder: Path, parent: Path) -> None:
    """Create `folder`, and `parent` inside it, each folder on the way for its owner only."""
    folder.parent.mkdir(mode=FOLDER_MODE, parents=True, exist_ok=True)
    chain = [folder]
    for part in parent.relative_to(folder).parts:
        chain.append(chain[-1] / part)
    for current in chain:
        if current.is_symlink():
            raise OSError(f"refusing to write through a link in the archive: {current}")
        try:
            current.mkdir(mode=FOLDER_MODE)
        except FileExistsError:
            continue
        current.chmod(FOLDER_MODE)
