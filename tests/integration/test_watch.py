"""The watcher on a real queue: at the inotify limit, a root falls back to polling.

The real inotify limit (fs.inotify.max_user_watches) cannot be exhausted
safely on a shared kernel: it would break every other watcher of the user on
the machine. The fallback is driven instead by an observer that raises what
watchdog's inotify observer raises at the limit, OSError(ENOSPC), when a root
is scheduled; the polling observer that replaces it is the real one."""

from __future__ import annotations

import asyncio
import errno

import pytest
import structlog
from watchdog.observers import Observer

from pgrecall.postgres.database import open_async_pool as open_pool
from pgrecall.worker import tasks
from pgrecall.worker.watch import Watcher
from tests.service import query, wait_for


class LimitedObserver(Observer):
    """watchdog's inotify observer, out of watches for the roots in `limited`."""

    limited: set[str] = set()

    def schedule(self, handler, path, **kwargs):
        if str(path) in self.limited:
            raise OSError(errno.ENOSPC, "inotify watch limit reached")
        return super().schedule(handler, path, **kwargs)


def _jobs_for(url: str, path: str) -> int:
    return query(
        url,
        "SELECT count(*) FROM procrastinate_jobs WHERE task_name = %s AND args->>'path' = %s",
        (tasks.INDEX_TASK, path),
    )[0][0]


def test_the_inotify_limit_falls_back_to_polling_for_that_root(db_url, tmp_path, monkeypatch):
    from pgrecall.worker import store

    limited, free = (tmp_path / "limited").resolve(), (tmp_path / "free").resolve()
    limited.mkdir()
    free.mkdir()
    monkeypatch.setattr(LimitedObserver, "limited", {str(limited)})

    async def scenario():
        app = tasks.build_app(db_url)
        async with app.open_async():
            pool = await open_pool(db_url)
            try:
                async with pool.connection() as conn:
                    await store.upsert_root(conn, "limited", str(limited))
                    await store.upsert_root(conn, "free", str(free))
                watcher = Watcher(
                    app,
                    [limited, free],
                    debounce_seconds=0.1,
                    pool=pool,
                    tick_seconds=0.2,
                    polling_seconds=0.2,
                    record_seconds=0.1,
                    observer_factory=LimitedObserver,
                )
                with structlog.testing.capture_logs() as logs:
                    running = asyncio.create_task(watcher.run())
                    await asyncio.wait_for(watcher.started.wait(), 60)
                    assert watcher.modes == {str(limited): "polling", str(free): "events"}
                    (limited / "polled.md").write_text("# Polled\n\nSeen by the polling observer.")
                    (free / "evented.md").write_text("# Evented\n\nSeen by inotify.")
                    await asyncio.to_thread(
                        wait_for,
                        lambda: _jobs_for(db_url, "polled.md") == 1 and _jobs_for(db_url, "evented.md") == 1,
                        10,
                        message="both changes enqueued",
                    )
                    await asyncio.to_thread(
                        wait_for,
                        lambda: query(db_url, "SELECT last_event_at FROM pgrecall.roots WHERE name = 'limited'")[0][0],
                        10,
                        message="last event recorded",
                    )
                    running.cancel()
                    with pytest.raises(asyncio.CancelledError):
                        await running
            finally:
                await pool.close()
        return logs

    logs = asyncio.run(scenario())
    limit_events = [entry for entry in logs if entry["event"] == "inotify_limit_reached"]
    assert len(limit_events) == 1 and limit_events[0]["root"] == str(limited)
    assert limit_events[0]["error"].startswith("ENOSPC")
    rows = dict(query(db_url, "SELECT name, watch_mode FROM pgrecall.roots"))
    assert rows == {"limited": "polling", "free": "events"}
