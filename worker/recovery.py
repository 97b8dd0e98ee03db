"""Jobs of workers that died (SIGKILL, power loss, a lost machine) go back to work.

Procrastinate presumes a worker dead once its heartbeat is older than
PGRECALL_STALLED_SECONDS. Its `doing` jobs still hold their path's lock, so no
other job of those paths can run until they are resolved. A stalled job is put
back in the queue; where a newer job of the same path is already waiting (the
queueing lock allows only one), the stalled job is deleted instead: the waiting
job reads the disk when it runs, so it does the same work.
"""

from __future__ import annotations

import dataclasses

import procrastinate
import psycopg
import structlog
from procrastinate.jobs import Status

from pgrecall.errors import first_line
from pgrecall.postgres import queries
from pgrecall.status import QUEUE

Q = queries.load("queue.sql")
log = structlog.get_logger("pgrecall.recovery")


@dataclasses.dataclass(frozen=True)
class Recovered:
    retried: int = 0
    superseded: int = 0

    @property
    def total(self) -> int:
        return self.retried + self.superseded


async def recover_stalled_jobs(app: procrastinate.App, stalled_seconds: float) -> Recovered:
    retried = superseded = 0
    stalled = await app.job_manager.get_stalled_jobs(queue=QUEUE, seconds_since_heartbeat=stalled_seconds)
    for job in stalled:
        try:
            await app.job_manager.retry_job(job)
            retried += 1
            log.warning("stalled_job_retried", job=job.id, task=job.task_name, args=job.task_kwargs)
        except procrastinate.exceptions.UniqueViolation:
            # The queueing lock: a job of this path is already waiting.
            await app.job_manager.finish_job(job, status=Status.ABORTED, delete_job=True)
            superseded += 1
            log.warning("stalled_job_superseded", job=job.id, task=job.task_name, args=job.task_kwargs)
        except procrastinate.exceptions.ConnectorException as exc:
            # Another process resolved it first ("not in doing status").
            log.info("stalled_job_taken", job=job.id, error=first_line(exc.__cause__ or exc))
    return Recovered(retried, superseded)


async def pending_jobs(conn: psycopg.AsyncConnection, roots: list[str]) -> tuple[int, int]:
    """(waiting, running) jobs of these roots."""
    cursor = await conn.execute(Q["pending_jobs"], {"queue": QUEUE, "roots": roots})
    todo, doing = await cursor.fetchone()
    return todo, doing


async def unaccounted_files(conn: psycopg.AsyncConnection, root: str, paths: list[str]) -> list[str]:
    """Of `paths`, those with neither an indexed row nor a recorded failure."""
    cursor = await conn.execute(Q["accounted_paths"], {"root": root, "paths": paths})
    accounted = {row[0] for row in await cursor.fetchall()}
    return [path for path in paths if path not in accounted]
