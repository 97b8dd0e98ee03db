"""The job queue: Procrastinate tasks for indexing and removing a path.

Every job carries a queueing lock and a lock on its path: a burst of saves
leaves at most one waiting job per file, and two jobs of one file never run at
the same time, even on different machines.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import procrastinate
import psycopg

from pgrecall.status import QUEUE  # the queue's name, defined once

if TYPE_CHECKING:  # type hints only: the Indexer comes in through each job's context
    from pgrecall.worker.pipeline import Indexer, Outcome

INDEX_TASK = "pgrecall.index_file"
REMOVE_TASK = "pgrecall.remove_path"
MOVE_TASK = "pgrecall.move_path"
HEARTBEATS_PER_STALLED_INTERVAL = 5

# Seconds running jobs get to finish when a worker is asked to stop; the jobs
# still running then are cancelled and go back to the queue (see RETRY).
SHUTDOWN_GRACE_SECONDS = 10.0

# Transient failures only (a lost connection, a server restarting) and jobs
# cancelled by a worker's shutdown; a broken file is recorded by the pipeline
# and never raises.
RETRY = procrastinate.RetryStrategy(
    max_attempts=8,
    exponential_wait=2,
    retry_exceptions={
        psycopg.OperationalError,
        psycopg.errors.SerializationFailure,
        psycopg.errors.DeadlockDetected,
        OSError,
        procrastinate.exceptions.JobAborted,
        asyncio.CancelledError,  # type: ignore[arg-type]  # a BaseException; the check is isinstance
    },
)


def _indexer(context: procrastinate.JobContext) -> Indexer:
    return context.additional_context["indexer"]


async def index_file(context: procrastinate.JobContext, root: str, path: str) -> dict:
    indexer = _indexer(context)
    outcome = await indexer.index_file(root, path)
    if outcome.status == "indexed" and root == context.additional_context.get("memory_root"):
        from pgrecall.worker.memory import history_writer as memory_history

        await memory_history.record_hand_edit(indexer.pool, root, path)  # a note changed by hand
    return _result(outcome)


async def remove_path(context: procrastinate.JobContext, root: str, path: str) -> dict:
    outcome = await _indexer(context).remove_path(root, path)
    return _result(outcome)


async def move_path(context: procrastinate.JobContext, root: str, source: str, destination: str) -> dict:
    outcome = await _indexer(context).move_path(root, source, destination)
    return _result(outcome)


def _result(outcome: Outcome) -> dict:
    return {
        "status": outcome.status,
        "chunks": outcome.chunks,
        "chunks_embedded": outcome.chunks_embedded,
        "chunks_reused": outcome.chunks_reused,
        "error": outcome.error,
    }


def path_key(root: str, path: str) -> str:
    return f"{root.rstrip('/')}/{path}"


def worker_options(settings, indexer: Indexer, *, wait: bool) -> dict:
    """What every pgrecall worker passes to Procrastinate's run_worker_async."""
    return {
        "queues": [QUEUE],
        "concurrency": settings.worker_concurrency,
        "wait": wait,
        "additional_context": {"indexer": indexer, "memory_root": _memory_root(settings)},
        "delete_jobs": "successful",  # failed jobs stay for inspection; done ones would pile up for years
        "shutdown_graceful_timeout": SHUTDOWN_GRACE_SECONDS,
    }


def _memory_root(settings) -> str | None:
    """The memory folder as its jobs name their root (a hand edit there is kept in its history)."""
    from pgrecall import roots
    from pgrecall.errors import PgRecallError

    try:
        return str(roots.memory_folder(settings.config_file, settings.home))
    except PgRecallError:
        return None  # a broken config: the service reports it; jobs still index


def heartbeat_options(settings) -> dict:
    """A worker's heartbeat, frequent enough that PGRECALL_STALLED_SECONDS of silence means it is gone."""
    return {
        "update_heartbeat_interval": max(0.5, settings.stalled_seconds / HEARTBEATS_PER_STALLED_INTERVAL),
        "stalled_worker_timeout": settings.stalled_seconds,
    }


def build_app(conninfo: str, max_connections: int = 4) -> procrastinate.App:
    connector = procrastinate.PsycopgConnector(conninfo=conninfo, min_size=1, max_size=max_connections)
    app = procrastinate.App(connector=connector)
    app.task(name=INDEX_TASK, queue=QUEUE, pass_context=True, retry=RETRY)(index_file)
    app.task(name=REMOVE_TASK, queue=QUEUE, pass_context=True, retry=RETRY)(remove_path)
    app.task(name=MOVE_TASK, queue=QUEUE, pass_context=True, retry=RETRY)(move_path)
    return app


async def enqueue(app: procrastinate.App, task_name: str, root: str, paths: list[str], batch_size: int = 500) -> int:
    """Defer one job per path; a path that already has a waiting job is left alone. Returns jobs added."""
    added = 0
    for start in range(0, len(paths), batch_size):
        batch = paths[start : start + batch_size]
        deferrers = [_deferrer(app, task_name, root, path) for path in batch]
        try:
            # One round trip for the whole batch in the common case...
            jobs = [d.make_new_job(root=root, path=path) for d, path in zip(deferrers, batch, strict=True)]
            await app.job_manager.batch_defer_jobs_async(jobs)
            added += len(batch)
        except procrastinate.exceptions.AlreadyEnqueued:
            # ...and one by one when some path is already waiting.
            for deferrer, path in zip(deferrers, batch, strict=True):
                try:
                    await deferrer.defer_async(root=root, path=path)
                    added += 1
                except procrastinate.exceptions.AlreadyEnqueued:
                    pass
    return added


async def enqueue_move(app: procrastinate.App, root: str, source: str, destination: str) -> bool:
    # Locked on the source: a job for the old path must not run alongside the move.
    key = path_key(root, source)
    deferrer = app.configure_task(MOVE_TASK, queueing_lock=f"move:{key}", lock=key, queue=QUEUE)
    try:
        await deferrer.defer_async(root=root, source=source, destination=destination)
        return True
    except procrastinate.exceptions.AlreadyEnqueued:
        return False


def _deferrer(app: procrastinate.App, task_name: str, root: str, path: str):
    key = path_key(root, path)
    return app.configure_task(task_name, queueing_lock=key, lock=key, queue=QUEUE)
