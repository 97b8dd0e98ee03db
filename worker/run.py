"""`pgrecall index`: scan folders, enqueue their files, work the queue until it is empty."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import signal
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import procrastinate
import procrastinate.worker
import psycopg
import structlog
from psycopg_pool import AsyncConnectionPool

from pgrecall import roots
from pgrecall.errors import InvalidInput, first_line
from pgrecall.postgres import database
from pgrecall.settings import Settings
from pgrecall.worker import reconciliation as reconcile
from pgrecall.worker import recovery, scan, statistics, store, tasks
from pgrecall.worker.pipeline import Indexer, Outcome

log = structlog.get_logger("pgrecall.index")
WAIT_POLL_SECONDS = 1.0


@dataclasses.dataclass
class IndexSummary:
    files_enqueued: int = 0
    removals_enqueued: int = 0
    statuses: Counter = dataclasses.field(default_factory=Counter)
    chunks: int = 0
    chunks_embedded: int = 0
    chunks_reused: int = 0
    seconds: float = 0.0
    embed_calls: int = 0
    embed_seconds: float = 0.0
    failures: list[Outcome] = dataclasses.field(default_factory=list)
    unaccounted: list[str] = dataclasses.field(default_factory=list)  # still there, neither indexed nor recorded: a bug

    @property
    def chunks_per_second(self) -> float:
        return self.chunks / self.seconds if self.seconds else 0.0


def resolve_targets(paths: list[str], roots_paths: list[Path] = ()) -> list[tuple[Path, list[str] | None]]:
    """(root, files) per argument: a folder is scanned (files None); a file is indexed alone, under
    the innermost of `roots_paths` that holds it (its path relative to that root), else under its
    own folder, which that does not make a root: `pgrecall status` lists such a folder as indexed,
    not followed, and counts none of its other files as missing."""
    targets = []
    for raw in paths:
        path = Path(raw).expanduser()
        if not path.exists():
            raise InvalidInput(f"no such file or folder: {raw}")
        path = path.resolve()
        if path.is_dir():
            targets.append((path, None))
        else:
            root = roots.containing(list(roots_paths), path) or path.parent
            parts = path.relative_to(root).parts
            targets.append((root, ["/".join(scan.escape_name(p) if scan.is_undecodable(p) else p for p in parts)]))
    return targets


@contextlib.contextmanager
def _no_progress(total: int) -> Iterator:
    yield None


async def run_index(settings: Settings, url: str, paths: list[str], progress=None) -> IndexSummary:
    """Index `paths` through the queue; without any, the roots serve follows (the config file's,
    one at least, and the memory folder). `progress` is a callable(total) -> context with .advance(outcome).

    Returns only when no job of these roots is left: jobs of a worker that died
    (an earlier run killed mid-way) are first waited for until they count as
    stalled, then run again. Every file of the run ends indexed, recorded
    with a reason, or removed (deleted since it was enqueued); any that does
    not is listed in `unaccounted`.
    """
    # The roots serve follows: none configured is an error only without a path.
    configured = roots.with_memories(
        roots.resolve([], settings.config_file, required=not paths),
        roots.memory_folder(settings.config_file, settings.home),
    )
    if paths:  # checked before any connection; again below with the roots the database knows
        resolve_targets(paths, [root.path for root in configured])

    async def enqueue(app: procrastinate.App, conn, summary: IndexSummary, indexer: Indexer) -> dict[str, list[str]]:
        if paths:
            registered = [Path(path) for path in await store.root_paths(conn)]
            targets = resolve_targets(paths, [*(root.path for root in configured), *registered])
        else:
            targets = [(root.path, None) for root in configured]
        for root in configured:  # by name, and an archive root as one, as serve registers them
            if any(target == root.path for target, _ in targets):
                folder = roots.archive_folder(settings.home, root)
                await store.upsert_root(conn, root.name, str(root.path), str(folder) if folder else None, root.project)
        presence: dict[str, list[str]] = {}
        for root, files in targets:
            root_text = str(root)
            if files is None:
                stats = await asyncio.to_thread(scan.stat_files, root)
                states = await store.file_states(conn, root_text, indexer.embedding_space)
                changed, vanished = reconcile.plan(stats, states, indexer.chunking)
                gone = vanished + await reconcile.copies_gone(conn, root_text)
                summary.removals_enqueued += await tasks.enqueue(app, tasks.REMOVE_TASK, root_text, gone)
                present = list(stats)
                # As the service's reconciliation does: a file of the size and modification time
                # it was indexed at is not read again. Failures are, to report their reasons.
                changed_or_failed = set(changed) | {path for path, state in states.items() if state.failed}
                to_index = [path for path in present if path in changed_or_failed]
                if unchanged := len(present) - len(to_index):
                    summary.statuses["unchanged"] += unchanged
            else:
                present = to_index = files
            presence.setdefault(root_text, []).extend(present)
            summary.files_enqueued += await tasks.enqueue(app, tasks.INDEX_TASK, root_text, to_index)
        return presence

    return await _run_jobs(settings, url, enqueue, progress)


async def run_reembed(settings: Settings, url: str, progress=None) -> IndexSummary:
    """Embed again every file whose vectors are of another embedding space than this
    process's embedder (another model, backend or quantization, or not recorded),
    through the queue, as `run_index` does; files of every root, memories included."""

    async def enqueue(app: procrastinate.App, conn, summary: IndexSummary, indexer: Indexer) -> dict[str, list[str]]:
        files = await store.files_of_other_space(conn, indexer.embedding_space)
        for root_text, paths in files.items():
            summary.files_enqueued += await tasks.enqueue(app, tasks.INDEX_TASK, root_text, paths)
        log.info("reembed_planned", space=indexer.embedding_space, files=sum(len(p) for p in files.values()))
        return files

    return await _run_jobs(settings, url, enqueue, progress)


async def _run_jobs(settings: Settings, url: str, enqueue, progress) -> IndexSummary:
    """Enqueue (enqueue(app, conn, summary, indexer) -> root -> paths of the run) and work
    the queue until no job of those roots is left; then account for every file."""
    summary = IndexSummary()
    app = tasks.build_app(url)
    bar = None

    def on_outcome(outcome: Outcome) -> None:
        summary.statuses[outcome.status] += 1
        summary.chunks += outcome.chunks
        summary.chunks_embedded += outcome.chunks_embedded
        summary.chunks_reused += outcome.chunks_reused
        if outcome.status in ("failed", "skipped"):
            summary.failures.append(outcome)
        if bar is not None:
            bar.advance(outcome)

    async with app.open_async():
        pool: AsyncConnectionPool | None = None
        indexer: Indexer | None = None
        loading: asyncio.Task | None = None
        try:
            pool = await database.open_async_pool(url)
            indexer = Indexer.for_settings(pool, settings, on_outcome=on_outcome)
            async with pool.connection() as conn:
                presence = await enqueue(app, conn, summary, indexer)
            if summary.files_enqueued:  # loaded while the first files are read, parsed and cut
                loading = asyncio.create_task(asyncio.to_thread(_load_quietly, indexer.embedder))
            waiting = await _waiting_jobs(app)
            started = time.perf_counter()
            with (progress or _no_progress)(waiting) as bar:
                await _work_until_done(app, pool, settings, indexer, list(presence))
                await _drop_vanished(app, pool, settings, indexer, presence, summary)
            summary.seconds = time.perf_counter() - started
            if loading is not None:
                await loading
            summary.embed_calls = indexer.batcher.calls
            summary.embed_seconds = indexer.batcher.busy_seconds
            async with pool.connection() as conn:
                await _fold_statistics(conn)
                for root_text, present in presence.items():
                    missing = await recovery.unaccounted_files(conn, root_text, present)
                    still_there = await asyncio.to_thread(_still_there, root_text, missing)
                    summary.unaccounted.extend(f"{root_text}/{path}" for path in still_there)
        finally:
            if indexer is not None:
                await indexer.close()
            if pool is not None:
                await pool.close()
    return summary


async def _drop_vanished(
    app: procrastinate.App, pool, settings: Settings, indexer: Indexer, presence: dict[str, list[str]], summary
) -> None:
    """Bring the index to the folders as they are now: a file of the run deleted after its job
    read it (or after it was found unchanged) is still in the index once the queue is empty.
    Each one the index holds and the disk no longer does gets a job again, which finds no file
    and removes it as any job does (or indexes it, if it came back meanwhile); repeated until a
    look finds none, or the same ones as the last look (their jobs could not remove them)."""
    previous: set[tuple[str, str]] = set()
    while True:
        vanished: dict[str, list[str]] = {}
        for root_text, present in presence.items():
            if gone := await asyncio.to_thread(_gone, root_text, present):
                async with pool.connection() as conn:
                    held = await store.held_paths(conn, root_text, gone)
                if held:
                    vanished[root_text] = sorted(held)
        found = {(root_text, path) for root_text, paths in vanished.items() for path in paths}
        if not found or found == previous:
            if found:
                log.warning("vanished_files_kept", files=len(found))
            return
        log.info("vanished_while_indexing", files=len(found))
        for root_text, paths in vanished.items():
            summary.removals_enqueued += await tasks.enqueue(app, tasks.INDEX_TASK, root_text, paths)
        await _work_until_done(app, pool, settings, indexer, list(vanished))
        previous = found


async def _fold_statistics(conn) -> None:
    """Fold what the run's writers left of the BM25 statistics' deltas, as a service's timer does
    within seconds: a run without a service would leave up to FOLD_EVERY transactions' deltas
    that every keyword search sums (on SciFact 17,570 term rows, 0.1 ms of each search).
    A failure costs only that: the next fold takes them."""
    try:
        await statistics.fold(conn)
    except psycopg.Error as exc:
        log.warning("statistics_fold_failed", error=first_line(exc))


def _load_quietly(embedder) -> None:
    """The model loaded ahead of its first use; a failure is the first embed's to report."""
    try:
        embedder.load()
    except Exception as exc:  # noqa: BLE001 - reported where the model is used
        log.debug("model_preload_failed", error=first_line(exc))


def _gone(root: str, paths: list[str]) -> list[str]:
    """Of `paths`, those with no file at them now (what a job finds as deleted)."""
    return [path for path in paths if scan.locate(Path(root), path) is None]


def _still_there(root: str, paths: list[str]) -> list[str]:
    """Of `paths`, those with a file at them now. One deleted since it was enqueued left
    the index with it (its job found nothing and removed it): a removal, not a failure."""
    return [path for path in paths if scan.locate(Path(root), path) is not None]


async def _work_until_done(app: procrastinate.App, pool, settings: Settings, indexer: Indexer, roots: list[str]):
    """Run a worker until no job of `roots` is waiting or running anywhere.

    A job still `doing` after our worker ran dry belongs to another worker: a
    live one (a service) finishes it, a dead one's is retried once its
    heartbeat is PGRECALL_STALLED_SECONDS old.
    """
    loop = asyncio.get_running_loop()
    interrupted = asyncio.Event()
    worker: procrastinate.worker.Worker | None = None

    def interrupt() -> None:
        interrupted.set()
        if worker is not None:
            # Running jobs get SHUTDOWN_GRACE_SECONDS, then go back to the queue.
            worker.shutdown_graceful_timeout = tasks.SHUTDOWN_GRACE_SECONDS
            worker.stop()

    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, interrupt)
    try:
        while not interrupted.is_set():
            await recovery.recover_stalled_jobs(app, settings.stalled_seconds)
            # A worker that runs dry (wait=False) stops as if asked to: its running jobs must be
            # left to finish however long a big file takes, not cancelled after the grace
            # period and retried (where the next attempt would be cancelled in turn).
            options = tasks.worker_options(settings, indexer, wait=False) | {"shutdown_graceful_timeout": None}
            worker = procrastinate.worker.Worker(
                app=app,
                **options,
                **tasks.heartbeat_options(settings),
                install_signal_handlers=False,
                listen_notify=False,
            )
            with contextlib.suppress(asyncio.CancelledError):
                await worker.run()
            worker = None
            async with pool.connection() as conn:
                todo, doing = await recovery.pending_jobs(conn, roots)
            if todo == 0 and doing == 0:
                return
            log.info("waiting_for_jobs", waiting=todo, running_elsewhere=doing)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(interrupted.wait(), timeout=WAIT_POLL_SECONDS)
        raise KeyboardInterrupt
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)


async def _waiting_jobs(app: procrastinate.App) -> int:
    queues = await app.job_manager.list_queues_async(queue=tasks.QUEUE)
    return sum(q["todo"] for q in queues)
