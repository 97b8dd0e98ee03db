"""A memory's history, written: each version before its change takes effect (pgrecall.memory.version_history reads them).

Every function here runs under the memory's lock (`lock_key`: the memory service holds it
across a change, a worker that indexed a hand edit takes it to record it), so a change and the
versions it leaves are never interleaved with another's.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import structlog

from pgrecall.errors import PgRecallError, first_line
from pgrecall.memory.notes import NOTE_NAME, MemoryNotes
from pgrecall.memory.version_history import EVENTS, HISTORY, folder, plan, recorded_versions, state_of, version_files
from pgrecall.postgres import queries
from pgrecall.worker.private_files import fsync_folder, private_folder, write_atomically

log = structlog.get_logger("pgrecall.memories")
Q = queries.load("memories.sql")


def lock_key(root: str, memory_id: str) -> str:
    """The advisory lock of one memory (pgrecall.worker.memory.writer), across processes."""
    return f"pgrecall.memory.id:{root}:{memory_id}"


def record(root: Path, memory_id: str, event: str, content: bytes) -> int:
    """Write the next version of the memory (the note as `event` leaves it); returns its number."""
    assert event in EVENTS, event
    private_folder(root / HISTORY)
    base = folder(root, memory_id)
    private_folder(base)
    if base.is_symlink() or not base.resolve().is_relative_to((root / HISTORY).resolve()):
        raise OSError(f"refusing to write a memory's history outside the memory folder: {memory_id}")
    files = version_files(root, memory_id)
    n = files[-1][0] + 1 if files else 1
    write_atomically(base / f"{n}.{event}.version", content)
    return n


def settle(notes: MemoryNotes, memory_id: str) -> str:
    """Make the recorded versions match the note (pgrecall.memory.version_history.plan): drop a last version
    whose change never happened, record a hand edit as an `edit` version. Returns what it did."""
    root = notes.root()
    recorded = recorded_versions(root, memory_id, last=2)
    state = state_of(notes, memory_id)
    action = plan(recorded, state)
    if action == "drop":
        last = recorded[-1]
        (folder(root, memory_id) / f"{last.n}.{last.event}.version").unlink()
        fsync_folder(folder(root, memory_id))
        log.info("memory_version_dropped", id=memory_id, n=last.n, memory_event=last.event)
    elif action == "edit":
        assert state.content is not None
        n = record(root, memory_id, "edit", state.content)
        log.info("memory_edit_recorded", id=memory_id, n=n)
    return action


def remove(root: Path, memory_id: str) -> None:
    """Delete a memory's history for good (forget --purge, a trash purge): nothing of it is kept."""
    base = folder(root, memory_id)
    if base.is_symlink():
        base.unlink()
    elif base.is_dir():
        shutil.rmtree(base)
    else:
        return
    fsync_folder(root / HISTORY)


async def record_hand_edit(pool, root: str, path: str) -> None:
    """After a worker indexed a changed note of the memory folder (`path`, relative to `root`):
    if it was changed by hand, not by pgrecall, record that as an `edit` version."""
    match = NOTE_NAME.fullmatch(path.rsplit("/", 1)[-1])
    if match is None:
        return
    memory_id = match[1]
    try:
        async with pool.connection() as conn, conn.transaction():
            await conn.execute(Q["lock_transaction"], {"key": lock_key(root, memory_id)})
            await asyncio.to_thread(settle, MemoryNotes(Path(root)), memory_id)
    except (OSError, PgRecallError) as exc:  # the next change of this memory settles it again
        log.warning("memory_edit_not_recorded", id=memory_id, path=path, error=first_line(exc))
