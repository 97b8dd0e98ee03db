"""`pgrecall serve`, `watch` and `worker`: the long-running halves of the service.

serve = watch + worker in one process. Several `worker` processes, on this
machine or others, can share one PostgreSQL queue.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal

import procrastinate
import structlog

from pgrecall.roots import Root
from pgrecall.settings import Settings
from pgrecall.worker import reconcile, store, tasks
from pgrecall.worker.chunk import chunking_signature
from pgrecall.worker.pipeline import Indexer
from pgrecall.worker.run import open_pool
from pgrecall.worker.watch import Watcher

log = structlog.get_logger("pgrecall.service")
HEARTBEAT_FRACTION = 5  # heartbeats per stalled interval


async def _supervise(name: str, factory, max_backoff: float = 30.0) -> None:
    """Run factory() forever: a component that fails (the database restarting) starts again, with backoff."""
    backoff = 1.0
    while True:
        try:
            await factory()
            return
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a component must never take the service down with it
            log.error(
                "component_failed",
                component=name,
                error=f"{type(exc).__name__}: {exc}".splitlines()[0],
                retry_in_s=backoff,
            )
            await asyncio.sleep(backoff)
            backoff = min(max_backoff, backoff * 2)


async def _recover_stalled_jobs(app: procrastinate.App, stalled_seconds: int) -> None:
    """Jobs of a worker that stopped sending heartbeats (killed, machine lost) are run again."""
    while True:
        for job in await app.job_manager.get_stalled_jobs(queue=tasks.QUEUE, seconds_since_heartbeat=stalled_seconds):
            await app.job_manager.retry_job(job)
            log.warning("stalled_job_retried", job=job.id, task=job.task_name, args=job.task_kwargs)
        await asyncio.sleep(max(1.0, stalled_seconds / 2))


async def _reconcile_forever(app: procrastinate.App, pool, roots: list[Root], settings: Settings) -> None:
    chunking = chunking_signature(settings.chunk_tokens)
    while True:
        for root in roots:
            await reconcile.reconcile(app, pool, root.path, chunking)
        await asyncio.sleep(settings.reconcile_seconds)


async def _worker(app: procrastinate.App, settings: Settings, pool) -> None:
    indexer = Indexer.for_settings(pool, settings)
    try:
        await app.run_worker_async(
            **tasks.worker_options(settings, indexer, wait=True),
            install_signal_handlers=False,
            update_heartbeat_interval=max(0.5, settings.stalled_seconds / HEARTBEAT_FRACTION),
            stalled_worker_timeout=settings.stalled_seconds,
            fetch_job_polling_interval=2.0,
        )
    finally:
        await indexer.close()


async def run_service(settings: Settings, url: str, roots: list[Root], *, watch: bool, work: bool) -> None:
    """Run until SIGTERM or SIGINT; then stop watching, let running jobs finish, and return."""
    app = tasks.build_app(url, max_connections=4)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    async with app.open_async():
        pool = await open_pool(url)
        components: list[asyncio.Task] = []
        try:
            if watch:
                async with pool.connection() as conn:
                    for root in roots:
                        await store.upsert_root(conn, root.name, str(root.path))
                watcher = Watcher(app, [root.path for root in roots])
                started = {
                    "watcher": watcher.run,
                    "reconcile": lambda: _reconcile_forever(app, pool, roots, settings),
                }
            else:
                started = {}
            if work:
                started["worker"] = lambda: _worker(app, settings, pool)
                started["stalled-jobs"] = lambda: _recover_stalled_jobs(app, settings.stalled_seconds)
            components = [
                asyncio.create_task(_supervise(name, factory), name=name) for name, factory in started.items()
            ]
            log.info("service_started", roots=[str(r.path) for r in roots], watch=watch, work=work)
            stopped = asyncio.create_task(stop.wait(), name="stop")
            done, _ = await asyncio.wait([stopped, *components], return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                if task is not stopped and task.exception() is not None:
                    raise task.exception()
        finally:
            log.info("service_stopping")
            for task in components:
                task.cancel()
            for task in components:
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            await pool.close()
            for signum in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(signum)
    log.info("service_stopped")
