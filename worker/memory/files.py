"""Memories as files: Markdown notes in a folder that pgrecall owns, written and deleted here.

The files are the source of truth. A memory survives any rebuild of the index,
and the user can read, edit, grep, sync and version it like any other note;
it reaches the index through the same pipeline as every other file. The note
format and the reading are pgrecall.memory.notes, which the read-only side
imports without this module.

Forgetting moves a note into the folder's trash (`.trash/`, hidden: never
scanned nor indexed) with its modification time set to the moment it was
forgotten; restoring moves it back under its old path, and the trash is purged
of notes forgotten longer ago than PGRECALL_MEMORY_TRASH_DAYS.

A note is written atomically (a private temporary file, fsync, rename, fsync
of the folder), readable by its owner only, in folders only its owner may
enter. Only notes found by their id inside the memory folder can be changed
or removed (pgrecall.memory.notes.MemoryNotes.locate).

Each change first writes the memory's next version into its history (`.history/<id>/`,
pgrecall.worker.memory.history_writer), then takes effect; deleting for good (`purge`, the trash's
purge) deletes the history too.
"""

from __future__ import annotations

import dataclasses
import datetime
import os
import secrets
import time
from pathlib import Path

from pgrecall.errors import InvalidInput
from pgrecall.memory.notes import TRASH, Memory, MemoryNotes, is_inside, mtime_iso, parse, relative_path, render
from pgrecall.memory.version_history import version_files
from pgrecall.worker.memory import history_writer as memory_history
from pgrecall.worker.private_files import FILE_MODE, FOLDER_MODE, fsync_folder, private_folder, write_atomically

__all__ = ["FILE_MODE", "FOLDER_MODE", "Memory", "MemoryFolder", "new_id", "now_utc", "relative_path"]


def now_utc() -> str:
    return datetime.datetime.now(datetime.UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def new_id() -> str:
    return secrets.token_hex(6)


class MemoryFolder(MemoryNotes):
    """The memory folder's files, written and deleted; no database here."""

    def ensure(self) -> Path:
        """Create the folder (private) if needed; return its resolved path (never through a link)."""
        if not self.folder.exists() and not self.folder.is_symlink():
            self.folder.parent.mkdir(parents=True, exist_ok=True)
            private_folder(self.folder)
        return self.root()

    def write(self, memory: Memory, event: str = "update", previous_path: str | None = None) -> Path:
        """Record the version `event` makes, then write the note atomically and privately; returns its path.
        `previous_path`: the note's path until now, when its name changes with its text or title: it is
        renamed first (one atomic rename, the old content under the new name should the write fail),
        then written, so that no moment has two notes of one id nor none."""
        root = self.ensure()
        target = root / memory.path
        parent = target.parent
        private_folder(parent.parent)
        private_folder(parent)
        if not is_inside(root, parent) or parent.is_symlink():
            raise OSError(f"refusing to write outside the memory folder: {memory.path}")
        content = render(memory).encode("utf-8")
        memory_history.record(root, memory.id, event, content)
        if previous_path is not None and previous_path != memory.path:
            previous = root / previous_path
            if not is_inside(root, previous.parent) or previous.parent.is_symlink():
                raise OSError(f"refusing to rename from outside the memory folder: {previous_path}")
            os.replace(previous, target)
            fsync_folder(previous.parent)
        write_atomically(target, content)
        return target

    def delete(self, memory_id: str, purge: bool = False) -> Memory | None:
        """Move the note into the trash (`purge`: delete it); returns what it held, with the moment it
        was forgotten (`forgotten`, as the trash lists it). Raises MemoryUnreadable, and leaves the
        note where it is, when it cannot be read."""
        path = self.locate(memory_id)
        if path is None:
            return None
        memory = self.load(path)
        if memory is None:
            return None
        root = self.root()
        if purge:
            path.unlink()
            fsync_folder(path.parent)
            memory_history.remove(root, memory_id)
            return dataclasses.replace(memory, forgotten=now_utc())
        target = root / TRASH / memory.path
        for folder in (root / TRASH, target.parent.parent, target.parent):
            private_folder(folder)
        if not is_inside(root / TRASH, target.parent) or target.parent.is_symlink():
            raise OSError(f"refusing to move outside the memory folder's trash: {memory.path}")
        memory_history.record(root, memory_id, "forget", path.read_bytes())
        os.replace(path, target)
        now = time.time()
        os.utime(target, (now, now))  # the trash's clock: when it was forgotten
        fsync_folder(target.parent)
        fsync_folder(path.parent)
        return dataclasses.replace(memory, forgotten=mtime_iso(target))

    def purge_forgotten(self, memory_id: str) -> Memory | None:
        """Delete a forgotten note from the trash for good; returns what it held."""
        path = self.locate(memory_id, trash=True)
        if path is None:
            return None
        memory = self.load(path, self.root() / TRASH)
        path.unlink()
        fsync_folder(path.parent)
        memory_history.remove(self.root(), memory_id)
        return memory

    def restore(self, memory_id: str) -> Memory | None:
        """Move a forgotten note back to its old path; None when the trash has none of this id."""
        path = self.locate(memory_id, trash=True)
        if path is None:
            return None
        memory = self.load(path, self.root() / TRASH)
        if memory is None:
            return None
        root = self.ensure()
        target = root / memory.path
        private_folder(target.parent.parent)
        private_folder(target.parent)
        if not is_inside(root, target.parent) or target.parent.is_symlink():
            raise OSError(f"refusing to restore outside the memory folder: {memory.path}")
        memory_history.record(root, memory_id, "restore", path.read_bytes())
        os.replace(path, target)
        fsync_folder(target.parent)
        fsync_folder(path.parent)
        return memory

    def settle(self, memory_id: str) -> str:
        """The history made to match the note (a hand edit recorded, a change that never happened dropped)."""
        return memory_history.settle(self, memory_id)

    def restore_version(self, memory_id: str, n: int, now: str) -> Memory | None:
        """Write back what version `n` held (from the trash too) as a new version; None when there is
        no version n. The note keeps its path; its `updated` is `now`."""
        root = self.ensure()
        chosen = next((path for number, _, path in version_files(root, memory_id) if number == n), None)
        if chosen is None:
            return None
        held = parse("", chosen.read_bytes().decode("utf-8", errors="replace"))
        if held is None:
            raise InvalidInput(
                f"version {n} of memory {memory_id} is not a memory note (edited by hand?): pick another"
            )
        live, forgotten = self.locate(memory_id), self.locate(memory_id, trash=True)
        current = self.load(live) if live else self.load(forgotten, root / TRASH) if forgotten else None
        path = current.path if current else relative_path(memory_id, held.created, held.title, held.text)
        memory = dataclasses.replace(held, id=memory_id, path=path, updated=now, forgotten=None)
        self.write(memory, "restore")
        if live is None and forgotten is not None:
            forgotten.unlink()  # back from the trash: the note just written replaces it
            fsync_folder(forgotten.parent)
        return memory

    def purge_trash(self, days: float, now: float | None = None) -> list[str]:
        """Delete the notes forgotten more than `days` ago; returns their paths (relative to the trash)."""
        if not self.folder.is_dir() or self.folder.is_symlink():
            return []
        cutoff = (time.time() if now is None else now) - days * 86400
        base = self.root() / TRASH
        purged = []
        for path in self.note_paths(trash=True):
            try:
                if path.stat().st_mtime < cutoff:
                    path.unlink()
                    memory_history.remove(self.root(), path.name[-15:-3])
                    purged.append(path.relative_to(base).as_posix())
            except OSError:
                continue  # gone meanwhile, or not ours to delete: the next round tries again
        return purged

    def same_text(self, text: str) -> tuple[Memory | None, dict[str, str]]:
        """The folder's memory holding exactly `text` (the oldest, by path), and the notes that could
        not be read (id: path). A note's bytes are searched for the text before it is parsed."""
        needle = text.encode("utf-8")
        unreadable: dict[str, str] = {}
        root = self.root()
        for path in self.note_paths():
            try:
                data = path.read_bytes()
            except OSError:
                unreadable[path.name[-15:-3]] = path.relative_to(root).as_posix()
                continue
            if needle not in data:
                continue
            memory = parse(path.relative_to(root).as_posix(), data.decode("utf-8", errors="replace"))
            if memory is not None and memory.text == text:
                return memory, unreadable
        return None, unreadable
