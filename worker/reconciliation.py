"""Bring the queue up to date with a folder: what changed while nobody was watching.

Size and modification time decide what to look at; the job then compares
content hashes, so a touched but unchanged file costs one read and no
embedding. A file that vanished while a new one with its exact content
appeared is a move: it keeps its chunks.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import time
from pathlib import Path

import procrastinate
import structlog
from psycopg_pool import AsyncConnectionPool

from pgrecall.settings import DEFAULT_MAX_FILE_BYTES
from pgrecall.worker import adapters, scan, store, tasks

log = structlog.get_logger("pgrecall.reconcile")


@dataclasses.dataclass
class Reconciliation:
    root: str
    files: int = 0
    to_index: int = 0
    to_remove: int = 0
    moves: int = 0
    files_hashed: int = 0
    enqueued: int = 0
    seconds: float = 0.0


def plan(
    present: dict[str, tuple[int | None, datetime.datetime | None]],
    indexed: dict[str, store.FileState],
    chunking: str,
) -> tuple[list[str], list[str]]:
    """(changed or new paths, vanished paths), from `present` sizes and modification times
    (scan.Entry.size_and_mtime) alone; a file chunked another way than `chunking`, or with
    vectors of another embedding space, counts as changed (store.FileState.is_current)."""
    changed = []
    for path, (size_bytes, mtime) in present.items():
        state = indexed.get(path)
        if state is None or not state.is_current(size_bytes, mtime, chunking):
            changed.append(path)
    vanished = sorted(path for path in indexed if path not in present)
    return sorted(changed), vanished


def _hash_file(entry: scan.Entry, max_file_bytes: int) -> str | None:
    """The content hash of a file its job would read; None for one it would not
    (a link out of the root, an unsupported type, over the size limit)."""
    size = entry.stat.st_size if entry.stat is not None else None
    if entry.problem or entry.real_path is None or not adapters.is_supported(entry.relative):
        return None
    if size is None or size > max_file_bytes:
        return None
    try:
        with open(entry.real_path, "rb") as file:
            data = file.read(max_file_bytes + 1)
    except OSError:
        return None
    return adapters.content_hash(data) if len(data) <= max_file_bytes else None


async def copies_gone(conn, root: str) -> list[str]:
    """Files the root's source deleted and pgrecall kept (worker/archive.py) whose copy
    has been deleted too: removed from the index like any deleted file."""
    archived = await store.archived_files(conn, root)
    return await asyncio.to_thread(lambda: [a.path for a in archived if not Path(a.copy).is_file()])


async def reconcile(
    app: procrastinate.App,
    pool: AsyncConnectionPool,
    root: Path,
    chunking: str,
    embedding_space: str,
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
) -> Reconciliation:
    started = time.perf_counter()
    root_text = str(root)
    if root.is_symlink():  # replaced by a link (scan.iter_entries): the index keeps what it had, nothing follows it
        log.warning("root_is_a_link", root=root_text, target=str(root.resolve()))
        return Reconciliation(root=root_text)
    entries = {entry.relative: entry for entry in await asyncio.to_thread(lambda: list(scan.iter_entries(root)))}
    present = {path: entry.size_and_mtime for path, entry in entries.items()}
    async with pool.connection() as conn:
        indexed = await store.file_states(conn, root_text, embedding_space)
        gone = await copies_gone(conn, root_text)
    changed, vanished = plan(present, indexed, chunking)
    report = Reconciliation(root=root_text, files=len(present))

    moves: list[tuple[str, str]] = []
    new_paths = [path for path in changed if path not in indexed]
    vanished_by_hash = {indexed[path].content_hash: path for path in vanished if indexed[path].content_hash}
    if vanished_by_hash and new_paths:
        for path in new_paths:
            digest = await asyncio.to_thread(_hash_file, entries[path], max_file_bytes)
            if digest is None:
                continue
            report.files_hashed += 1
            if digest in vanished_by_hash:
                moves.append((vanished_by_hash.pop(digest), path))
    moved_from = {source for source, _ in moves}
    moved_to = {destination for _, destination in moves}
    to_index = [path for path in changed if path not in moved_to]
    to_remove = [path for path in vanished if path not in moved_from] + gone

    for source, destination in moves:
        report.enqueued += await tasks.enqueue_move(app, root_text, source, destination)
    report.enqueued += await tasks.enqueue(app, tasks.INDEX_TASK, root_text, to_index)
    report.enqueued += await tasks.enqueue(app, tasks.REMOVE_TASK, root_text, to_remove)
    report.to_index, report.to_remove, report.moves = len(to_index), len(to_remove), len(moves)
    report.seconds = round(time.perf_counter() - started, 3)
    log.info("root_reconciled", **dataclasses.asdict(report))
    return report
