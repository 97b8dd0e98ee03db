"""Memories as files: Markdown notes in a folder that pgrecall owns, written and deleted here.

The files are the source of truth. A memory survives any rebuild of the index,
and the user can read, edit, grep, sync and version it like any other note;
it reaches the index through the same pipeline as every other file. The note
format and the reading are pgrecall.memory_notes, which the read-only side
imports without this module.

A note is written atomically (a private temporary file, fsync, rename, fsync
of the folder), readable by its owner only, in folders only its owner may
enter. Only notes found by their id inside the memory folder can be changed
or removed (pgrecall.memory_notes.MemoryNotes.locate).
"""

from __future__ import annotations

import datetime
import secrets
from pathlib import Path

from pgrecall.memory_notes import Memory, MemoryNotes, is_inside, parse, relative_path, render
from pgrecall.worker.private_files import FILE_MODE, FOLDER_MODE, fsync_folder, private_folder, write_atomically

__all__ = ["FILE_MODE", "FOLDER_MODE", "Memory", "MemoryFolder", "new_id", "now_utc", "relative_path"]


def now_utc() -> str:
    return datetime.datetime.now(datetime.UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def new_id() -> str:
    return secrets.token_hex(6)


class MemoryFolder(MemoryNotes):
    """The memory folder's files, written and deleted; no database here."""

    def ensure(self) -> Path:
        """Create the folder (private) if needed; return its resolved path."""
        if not self.folder.exists():
            self.folder.parent.mkdir(parents=True, exist_ok=True)
            private_folder(self.folder)
        return self.folder.resolve()

    def write(self, memory: Memory) -> Path:
        """Write the note atomically and privately; returns its path."""
        root = self.ensure()
        target = root / memory.path
        parent = target.parent
        private_folder(parent.parent)
        private_folder(parent)
        if not is_inside(root, parent) or parent.is_symlink():
            raise OSError(f"refusing to write outside the memory folder: {memory.path}")
        write_atomically(target, render(memory).encode("utf-8"))
        return target

    def delete(self, memory_id: str) -> Memory | None:
        path = self.locate(memory_id)
        if path is None:
            return None
        memory = parse(self.relative(path), path.read_text(encoding="utf-8", errors="replace"))
        path.unlink()
        fsync_folder(path.parent)
        return memory
