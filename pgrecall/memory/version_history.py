"""A memory's history, read: every version its note held, kept beside the memory folder's notes.

`<memory folder>/.history/<id>/<n>.<event>.version` holds the whole note (front matter and text)
as version n left it; event is remember, update, forget, restore or edit (a change made by hand,
or a note that predates history). Hidden, like the trash, so never scanned nor indexed.
Versioned files rather than a git repository: no dependency, and each version is written with
the discipline the notes already use (a private temporary file, fsync, rename), so a crash
leaves a version whole or absent. pgrecall.worker.memory.history_writer writes them.

A version is written before its change takes effect, so a process killed in between leaves a
last version the note never reached. Which versions count is `plan`, a pure function of the
versions and of the note as it is; the writer applies it under the memory's lock, the readers
(`history`, which needs no database) show its result.
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import re
from pathlib import Path
from typing import Any

from pgrecall.memory.notes import TRASH, MemoryNotes, MemoryNotFound, parse

HISTORY = ".history"
EVENTS = ("remember", "update", "forget", "restore", "edit")
_VERSION_NAME = re.compile(r"([1-9][0-9]{0,8})\.(" + "|".join(EVENTS) + r")\.version")
LIVE, FORGOTTEN, GONE = "live", "forgotten", "gone"


@dataclasses.dataclass(frozen=True)
class Version:
    n: int
    event: str
    time: str  # when it was written (ISO 8601, UTC)
    content: bytes  # the note, whole
    recorded: bool = True  # False: a hand edit seen but not yet recorded (history shows it as the next version)

    @property
    def place(self) -> str:
        return FORGOTTEN if self.event == "forget" else LIVE

    @property
    def hash(self) -> str:
        """The memory's `version` as this version left it (sha256 of the note, as Memory.version)."""
        return hashlib.sha256(self.content).hexdigest()[:16]

    def memory(self, memory_id: str):
        return parse("", self.content.decode("utf-8", errors="replace")) or _unparsed(memory_id)

    def to_json(self, memory_id: str) -> dict[str, Any]:
        memory = self.memory(memory_id)
        return {
            "n": self.n,
            "event": self.event,
            "time": self.time,
            "version": self.hash,
            "title": memory.title,
            "text": memory.text,
            "tags": list(memory.tags),
            "metadata": dict(memory.metadata),
            "updated": memory.updated,
            "recorded": self.recorded,
        }

    def first_line(self, memory_id: str) -> str:
        memory = self.memory(memory_id)
        lines = (memory.title or memory.text or "").splitlines()
        return lines[0] if lines else ""


@dataclasses.dataclass(frozen=True)
class State:
    """Where a memory's note is now, and its bytes (None: gone, or unreadable)."""

    place: str
    content: bytes | None


def _unparsed(memory_id: str):
    from pgrecall.memory.notes import Memory

    return Memory(memory_id, "", None, "", (), None, {}, "", "")


def folder(root: Path, memory_id: str) -> Path:
    return root / HISTORY / memory_id


def version_files(root: Path, memory_id: str) -> list[tuple[int, str, Path]]:
    """(n, event, path) of a memory's version files, oldest first, by their names only;
    temporary files of a write in flight and anything not ours are left out."""
    base = folder(root, memory_id)
    if not base.is_dir() or base.is_symlink():
        return []
    found = []
    for path in base.iterdir():
        match = _VERSION_NAME.fullmatch(path.name)
        if match is not None and not path.is_symlink():
            found.append((int(match[1]), match[2], path))
    return sorted(found)


def recorded_versions(root: Path, memory_id: str, last: int | None = None) -> list[Version]:
    """The versions of a memory, oldest first (`last`: only that many of the newest, all that
    `plan` needs, so a change never reads a long history); unreadable files are left out."""
    files = version_files(root, memory_id)
    found = []
    for n, event, path in files if last is None else files[-last:]:
        try:
            content = path.read_bytes()
            moment = path.stat().st_mtime
        except OSError:
            continue
        found.append(Version(n, event, _iso(moment), content))
    return found


def state_of(notes: MemoryNotes, memory_id: str) -> State:
    for place, trash in ((LIVE, False), (FORGOTTEN, True)):
        path = notes.locate(memory_id, trash=trash)
        if path is not None:
            try:
                return State(place, path.read_bytes())
            except OSError:
                return State(place, None)
    return State(GONE, None)


def plan(versions: list[Version], state: State) -> str:
    """What the versions lack to match the note: "ok"; "drop" (the last version was written but
    its change never happened: a crash between the two writes, the note is as the version before
    left it); "edit" (the note changed by hand since the last version: record it)."""
    if state.place != GONE and state.content is None:
        return "ok"  # unreadable: nothing can be compared
    if versions and _matches(versions[-1], state):
        return "ok"
    if versions:
        before = versions[-2] if len(versions) > 1 else None
        if (before is not None and _matches(before, state)) or (before is None and state.place == GONE):
            return "drop"
    return "edit" if state.place == LIVE else "ok"


def _matches(version: Version, state: State) -> bool:
    return version.place == state.place and version.content == state.content


def versions(notes: MemoryNotes, memory_id: str) -> list[Version]:
    """The memory's history as it stands, oldest first: the recorded versions with `plan` applied
    (a change that never happened is left out, a hand edit not yet recorded is shown as the next)."""
    root = notes.root()
    recorded = recorded_versions(root, memory_id)
    state = state_of(notes, memory_id)
    action = plan(recorded, state)
    if action == "drop":
        return recorded[:-1]
    if action == "edit":
        assert state.content is not None
        path = notes.locate(memory_id)
        moment = path.stat().st_mtime if path is not None else 0.0
        n = recorded[-1].n + 1 if recorded else 1
        return [*recorded, Version(n, "edit", _iso(moment), state.content, recorded=False)]
    return recorded


def history(folder_path: Path, memory_id: Any) -> list[Version]:
    """The history of the memory of this id in the memory folder (no database); MemoryNotFound
    when it has none (never remembered, or purged)."""
    from pgrecall import contract

    clean_id = contract.memory_id(memory_id)
    found = versions(MemoryNotes(folder_path), clean_id)
    if not found:
        raise MemoryNotFound(f"no memory {clean_id} (nor any history of it)")
    return found


def _iso(moment: float) -> str:
    stamp = datetime.datetime.fromtimestamp(moment, datetime.UTC).replace(microsecond=0)
    return stamp.isoformat().replace("+00:00", "Z")


__all__ = ["EVENTS", "HISTORY", "TRASH", "State", "Version", "history", "plan", "versions"]


def version_number(value: Any) -> int | None:
    """A version's n as a caller gives it (None: no version asked for); InvalidInput otherwise."""
    from pgrecall.errors import InvalidInput

    if value is None:
        return None
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 999_999_999:
        raise InvalidInput(f"a version is a number from 1 (pgrecall memories history lists them), got {value!r}")
    return value
