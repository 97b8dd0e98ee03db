"""While a watcher runs, it holds a lock per root that `pgrecall status` reads: a root is said to
be watched only while a live process watches it.

A session-level advisory lock on a connection of its own: PostgreSQL drops it the moment that
session ends, however the process ended (SIGTERM, SIGKILL, a crash), so no heartbeat has to age
before status stops saying "watched". A watcher that stops cleanly also records when it stopped
(watcher_seen_at), which status shows as "last watched until".
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import psycopg
import structlog

from pgrecall.errors import first_line
from pgrecall.postgres import queries
from pgrecall.postgres.locks import WATCH_LOCK_PREFIX

log = structlog.get_logger("pgrecall.watch")
Q = queries.load("service.sql")


class WatchLease:
    def __init__(self, conninfo: str, roots: list[Path]):
        self.conninfo = conninfo
        self.roots = roots
        self.conn: psycopg.AsyncConnection | None = None

    async def hold(self) -> None:
        """Take the locks, or take them again on a new connection if the one holding them was lost
        (the database restarted); a database away is tried again at the next call."""
        if self.conn is not None:
            try:
                await self.conn.execute("SELECT 1")
                return
            except psycopg.Error:
                await self._close()
        try:
            conn = await psycopg.AsyncConnection.connect(self.conninfo, autocommit=True, connect_timeout=5)
        except psycopg.Error as exc:
            log.debug("watch_lease_not_taken", error=first_line(exc))
            return
        try:
            for root in self.roots:
                await conn.execute(Q["hold_watch_lock"], {"prefix": WATCH_LOCK_PREFIX, "path": str(root)})
        except psycopg.Error as exc:
            log.debug("watch_lease_not_taken", error=first_line(exc))
            await conn.close()
            return
        self.conn = conn

    async def release(self) -> None:
        """Record when the watch stopped, then drop the locks (closing the session would too)."""
        if self.conn is None:
            return
        try:
            for root in self.roots:
                await self.conn.execute(Q["touch_watcher"], {"path": str(root), "last_event_at": None})
            await self.conn.execute(Q["release_watch_locks"])
        except psycopg.Error as exc:
            log.debug("watch_lease_not_released", error=first_line(exc))
        finally:
            await self._close()

    async def _close(self) -> None:
        conn, self.conn = self.conn, None
        if conn is not None:
            with contextlib.suppress(psycopg.Error):
                await conn.close()
