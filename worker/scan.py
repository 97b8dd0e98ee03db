"""Which files under a root belong to the index: everything but hidden, ignored and tool folders."""

from __future__ import annotations

import datetime
import os
from collections.abc import Iterator
from pathlib import Path

import pathspec

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


def load_ignore(root: Path) -> pathspec.PathSpec:
    patterns = list(DEFAULT_IGNORED)
    ignore_file = root / IGNORE_FILE
    if ignore_file.is_file():
        patterns.extend(ignore_file.read_text(encoding="utf-8", errors="replace").splitlines())
    return pathspec.PathSpec.from_lines("gitignore", patterns)


def is_hidden(relative_path: str) -> bool:
    return any(part.startswith(".") for part in relative_path.split("/"))


def is_ignored(relative_path: str, spec: pathspec.PathSpec) -> bool:
    return is_hidden(relative_path) or spec.match_file(relative_path)


def iter_files(root: Path, spec: pathspec.PathSpec | None = None) -> Iterator[str]:
    """Relative POSIX paths of the root's files, sorted, without following links out of the root."""
    root = root.resolve()
    spec = spec if spec is not None else load_ignore(root)
    for directory, dirnames, filenames in os.walk(root):
        base = Path(directory)
        relative_dir = base.relative_to(root).as_posix()
        prefix = "" if relative_dir == "." else relative_dir + "/"
        dirnames[:] = sorted(d for d in dirnames if not is_ignored(prefix + d + "/", spec))
        for name in sorted(filenames):
            relative = prefix + name
            if is_ignored(relative, spec):
                continue
            full = base / name
            if full.is_symlink() and not full.resolve().is_relative_to(root):
                continue
            if full.is_file():
                yield relative


_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def mtime_of(stat: os.stat_result) -> datetime.datetime:
    """The modification time at the microsecond precision PostgreSQL keeps, exactly."""
    return _EPOCH + datetime.timedelta(microseconds=stat.st_mtime_ns // 1000)


def stat_files(root: Path) -> dict[str, tuple[int, datetime.datetime]]:
    """relative path -> (size, mtime) of the root's files."""
    states = {}
    for relative in iter_files(root):
        try:
            stat = (root / relative).stat()
        except FileNotFoundError:
            continue
        states[relative] = (stat.st_size, mtime_of(stat))
    return states
