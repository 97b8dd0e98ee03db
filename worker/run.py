"""`pgrecall index`: scan folders, enqueue their files, work the queue until it is empty."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import procrastinate
from psycopg_pool import AsyncConnectionPool

from pgrecall import database
from pgrecall.errors import InvalidInput
from pgrecall.settings import Settings
from pgrecall.worker import scan, store, tasks
from pgrecall.worker.pipeline import Indexer, Outcome


@dataclasses.dataclass
class IndexSummary:
    files_enqueued: int = 0
    removals_enqueued: int = 0
    statuses: Counter = dataclasses.field(default_factory=Counter)
    chunks: int = 0
    seconds: float = 0.0
    embed_calls: int = 0
    embed_seconds: float = 0.0
    failures: list[Outcome] = dataclasses.field(default_factory=list)

    @property
    def chunks_per_second(self) -> float:
        return self.chunks / self.seconds if self.seconds else 0.0


def resolve_targets(paths: list[str]) -> list[tuple[Path, list[str] | None]]:
    """(root, files) per argument: a folder is scanned (files None), a file is indexed alone."""
    targets = []
    for raw in paths:
        path = Path(raw).expanduser()
        if not path.exists():
            raise InvalidInput(f"no such file or folder: {raw}")
        path = path.resolve()
        if path.is_dir():
            targets.append((path, None))
        else:
            targets.append((path.parent, [path.name]))
    return targets


@contextlib.contextmanager
def _no_progress(total: int) -> Iterator:
    yield None


async def open_pool(url: str, max_size: int = 4) -> AsyncConnectionPool:
    pool = AsyncConnectionPool(
        url, min_size=1, max_size=max_size, configure=database.configure_connection_async, open=False
    )
    await pool.open(wait=True, timeout=30)
    return pool


async def run_index(settings: Settings, url: str, paths: list[str], progress=None) -> IndexSummary:
    """Index `paths` through the queue; `progress` is a callable(total) -> context with .advance(outcome)."""
    targets = resolve_targets(paths)
    summary = IndexSummary()
    app = tasks.build_app(url)
    bar = None

    def on_outcome(outcome: Outcome) -> None:
        summary.statuses[outcome.status] += 1
        summary.chunks += outcome.chunks
        if outcome.status in ("failed", "skipped"):
            summary.failures.append(outcome)
        if bar is not None:
            bar.advance(outcome)

    async with app.open_async():
        pool = await open_pool(url)
        indexer = Indexer.for_settings(pool, settings, on_outcome=on_outcome)
        try:
            async with pool.connection() as conn:
                for root, files in targets:
                    root_text = str(root)
                    if files is None:
                        present = await asyncio.to_thread(lambda r=root: list(scan.iter_files(r)))
                        indexed = await store.indexed_paths(conn, root_text)
                        gone = sorted(set(indexed) - set(present))
                        summary.removals_enqueued += await tasks.enqueue(app, tasks.REMOVE_TASK, root_text, gone)
                    else:
                        present = files
                    summary.files_enqueued += await tasks.enqueue(app, tasks.INDEX_TASK, root_text, present)
            waiting = await _waiting_jobs(app)
            started = time.perf_counter()
            with (progress or _no_progress)(waiting) as bar:
                await app.run_worker_async(
                    **tasks.worker_options(settings, indexer, wait=False),
                    install_signal_handlers=True,
                    listen_notify=False,
                )
            summary.seconds = time.perf_counter() - started
            summary.embed_calls = indexer.batcher.calls
            summary.embed_seconds = indexer.batcher.busy_seconds
        finally:
            await indexer.close()
            await pool.close()
    return summary


async def _waiting_jobs(app: procrastinate.App) -> int:
    queues = await app.job_manager.list_queues_async(queue=tasks.QUEUE)
    return sum(q["todo"] for q in queues)
