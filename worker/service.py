"""`pgrecall serve`, `watch` and `worker`: the long-running halves of the service.

serve = watch + worker in one process. Several `worker` processes, on this
machine or others, can share one PostgreSQL queue.

Under systemd (Type=notify) the service speaks sd_notify: READY=1 once the
watcher and the worker run, STATUS= with the queue and the last indexed time,
WATCHDOG=1 from the watcher's own loop (from the worker's supervision when
there is no watcher), STOPPING=1 on SIGTERM.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime
import signal
from pathlib import Path

import procrastinate
import procrastinate.worker
import psycopg
import structlog
from psycopg.rows import class_row

from pgrecall.embedders.embedding import embedder_for
from pgrecall.errors import PgRecallError, first_line, reason
from pgrecall.postgres import database, queries
from pgrecall.roots import MEMORY_ROOT, Root, archive_folder
from pgrecall.settings import Settings
from pgrecall.worker import reconciliation as reconcile
from pgrecall.worker import recovery, statistics, store, tasks
from pgrecall.worker.chunk import chunking_signature
from pgrecall.worker.memory.files import MemoryFolder
from pgrecall.worker.pipeline import Indexer
from pgrecall.worker.sdnotify import Notifier
from pgrecall.worker.watch import POLLING, Watcher

log = structlog.get_logger("pgrecall.service")
Q = queries.load("service.sql")
HEARTBEAT_FRACTION = 5  # heartbeats per stalled interval
TICK_SECONDS = 5.0  # the watcher (and the worker's watchdog) wakes at least this often
STATUS_SECONDS = 10.0  # STATUS= refreshed this often


async def _supervise(name: str, factory, running: dict[str, bool], max_backoff: float = 30.0) -> None:
    """Run factory() forever: a component that fails (the database restarting) starts again, with backoff."""
    backoff = 1.0
    while True:
        running[name] = True
        try:
            await factory()
            return
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a component must never take the service down with it
            running[name] = False
            log.error(
                "component_failed",
                component=name,
                error=reason(exc),
                retry_in_s=backoff,
            )
            await asyncio.sleep(backoff)
            backoff = min(max_backoff, backoff * 2)
        finally:
            running[name] = False


async def _recover_stalled_jobs(app: procrastinate.App, stalled_seconds: int) -> None:
    """Jobs of a worker that stopped sending heartbeats (killed, machine lost) are run again."""
    while True:
        await recovery.recover_stalled_jobs(app, stalled_seconds)
        await asyncio.sleep(max(1.0, stalled_seconds / 2))


async def _reconcile_forever(app: procrastinate.App, pool, roots: list[Root], settings: Settings) -> None:
    chunking = chunking_signature(settings.chunk_tokens, settings.redact_secrets)
    space = embedder_for(settings).space
    while True:
        for root in roots:
            await reconcile.reconcile(app, pool, root.path, chunking, space, max_file_bytes=settings.max_file_bytes)
            if root.name == MEMORY_ROOT:
                await _purge_trash(root.path, settings.memory_trash_days)
        await asyncio.sleep(settings.reconcile_seconds)


async def _purge_trash(folder: Path, days: int) -> None:
    """Forgotten memories older than PGRECALL_MEMORY_TRASH_DAYS leave the trash for good."""
    try:
        purged = await asyncio.to_thread(MemoryFolder(folder).purge_trash, days)
    except (OSError, PgRecallError) as exc:  # a folder replaced by a link, no permission: the next round retries
        log.warning("memory_trash_not_purged", folder=str(folder), error=reason(exc))
        return
    for path in purged:
        log.info("memory_purged", path=path, after_days=days)


async def _worker(app: procrastinate.App, settings: Settings, pool, ready: asyncio.Event) -> None:
    """Procrastinate's worker; `ready` is set once it is registered in the database and fetching jobs."""
    indexer = Indexer.for_settings(pool, settings)
    worker = procrastinate.worker.Worker(
        app=app,
        **tasks.worker_options(settings, indexer, wait=True),
        install_signal_handlers=False,
        update_heartbeat_interval=max(0.5, settings.stalled_seconds / HEARTBEAT_FRACTION),
        stalled_worker_timeout=settings.stalled_seconds,
        fetch_job_polling_interval=2.0,
    )
    running = asyncio.create_task(worker.run(), name="procrastinate-worker")
    try:
        while worker.worker_id is None and not running.done():
            await asyncio.sleep(0.05)
        if not running.done():
            ready.set()
        await running
    finally:
        ready.clear()
        if not running.done():
            # A cancel can be lost before the worker's loop starts: a serve stopped during its start-up
            # logged "Starting worker" after service_stopping and never stopped (test_startup). The
            # stop request reaches the loop either way.
            worker.stop()
            running.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await running
        await indexer.close()


@dataclasses.dataclass(frozen=True)
class ServiceStatus:
    """What STATUS= says (query service_status)."""

    todo: int
    doing: int
    last_indexed_at: datetime.datetime | None


def status_line(status: ServiceStatus, modes: dict[str, str]) -> str:
    """The one line `systemctl status` shows under the unit."""
    last_indexed = status.last_indexed_at
    last = last_indexed.astimezone(datetime.UTC).strftime("%Y-%m-%d %H:%M:%S UTC") if last_indexed else "never"
    parts = [f"queue: {status.todo} waiting, {status.doing} running", f"last indexed: {last}"]
    if modes:
        polled = sum(1 for mode in modes.values() if mode == POLLING)
        parts.append(f"roots: {len(modes) - polled} by events, {polled} polled")
    return "; ".join(parts)


async def _status(pool, watcher: Watcher | None) -> str:
    modes = watcher.modes if watcher is not None else {}
    try:
        async with pool.connection(timeout=2.0) as conn, conn.cursor(row_factory=class_row(ServiceStatus)) as cursor:
            await cursor.execute(Q["service_status"], {"queue": tasks.QUEUE})
            row = await cursor.fetchone()
    except psycopg.Error as exc:
        return f"database unavailable: {first_line(exc)}"
    assert row is not None  # a SELECT without FROM: one row, always
    return status_line(row, modes)


async def _notify(
    notifier: Notifier, pool, waits: list[asyncio.Event], watcher: Watcher | None, running: dict[str, bool]
) -> None:
    """READY=1 once every component runs, then STATUS= every STATUS_SECONDS.

    Without a watcher, WATCHDOG=1 is sent here, while the worker component runs.
    """
    await asyncio.gather(*(event.wait() for event in waits))
    notifier.ready(await _status(pool, watcher) if notifier.enabled else None)
    log.info("service_ready", notify=notifier.enabled, watchdog_s=notifier.watchdog_timeout)
    tick = min(TICK_SECONDS, notifier.watchdog_interval / 2) if notifier.watchdog_interval else STATUS_SECONDS
    loop = asyncio.get_running_loop()
    reported = loop.time()
    while notifier.enabled:
        await asyncio.sleep(tick)
        if watcher is None and running.get("worker") and all(event.is_set() for event in waits):
            notifier.keepalive()
        if loop.time() - reported >= STATUS_SECONDS:
            notifier.status(await _status(pool, watcher))
            reported = loop.time()


async def run_service(settings: Settings, url: str, roots: list[Root], *, watch: bool, work: bool) -> None:
    """Run until SIGTERM or SIGINT; then stop watching, let running jobs finish, and return."""
    notifier = Notifier.from_environ()
    app = tasks.build_app(url, max_connections=4)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    async with app.open_async():
        pool = None
        components: list[asyncio.Task] = []
        notifying: asyncio.Task | None = None
        running: dict[str, bool] = {}
        try:
            pool = await database.open_async_pool(url)
            waits: list[asyncio.Event] = []
            watcher = None
            started = {}
            if watch:
                async with pool.connection() as conn:
                    for root in roots:
                        folder = archive_folder(settings.home, root)
                        await store.upsert_root(
                            conn, root.name, str(root.path), str(folder) if folder else None, root.project
                        )
                tick = min(TICK_SECONDS, notifier.watchdog_interval / 2) if notifier.watchdog_interval else TICK_SECONDS
                watcher = Watcher(
                    app, [root.path for root in roots], pool=pool, alive=notifier.keepalive, tick_seconds=tick
                )
                waits.append(watcher.started)
                started["watcher"] = watcher.run
                started["reconcile"] = lambda: _reconcile_forever(app, pool, roots, settings)
            if work:
                worker_ready = asyncio.Event()
                waits.append(worker_ready)
                await recovery.recover_stalled_jobs(app, settings.stalled_seconds)
                started["worker"] = lambda: _worker(app, settings, pool, worker_ready)
                started["stalled-jobs"] = lambda: _recover_stalled_jobs(app, settings.stalled_seconds)
                started["statistics"] = lambda: statistics.fold_forever(pool)  # BM25 deltas into their base
            components = [
                asyncio.create_task(_supervise(name, factory, running), name=name) for name, factory in started.items()
            ]
            notifying = asyncio.create_task(_notify(notifier, pool, waits, watcher, running), name="notify")
            log.info("service_started", roots=[str(r.path) for r in roots], watch=watch, work=work)
            stopped = asyncio.create_task(stop.wait(), name="stop")
            done, _ = await asyncio.wait([stopped, *components], return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                if task is not stopped and task.exception() is not None:
                    raise task.exception()
        finally:
            notifier.stopping("stopping: finishing running jobs")
            log.info("service_stopping")
            for task in [*components, *([notifying] if notifying else [])]:
                task.cancel()
            for task in [*components, *([notifying] if notifying else [])]:
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            if pool is not None:
                await pool.close()
            notifier.close()
            for signum in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(signum)
    log.info("service_stopped")
