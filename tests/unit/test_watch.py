"""The watcher: what an event means (pure), the fallback to polling at the inotify limit, a dead observer.

The real inotify limit (fs.inotify.max_user_watches) cannot be exhausted
safely on a shared kernel: it would break every other watcher of the user on
the machine. The fallback is driven instead by an observer that raises what
watchdog's inotify observer raises at the limit, OSError(ENOSPC), when a root
is scheduled; the polling observer that replaces it is the real one.
"""

from __future__ import annotations

import asyncio
import datetime
import errno
import threading
from pathlib import Path

import pytest
import structlog
from watchdog.events import (
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
    FileClosedNoWriteEvent,
    FileCreatedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileOpenedEvent,
)
from watchdog.observers import Observer

from pgrecall.database import open_async_pool as open_pool
from pgrecall.worker import scan, tasks, watch
from pgrecall.worker.watch import Change, Watcher, changes_for, describe_watch
from tests.service import query, wait_for

ROOT = Path("/notes")
SPEC = scan.load_ignore(ROOT)  # the defaults: hidden names, *.tmp, editor backups


@pytest.mark.parametrize(
    ("event", "expected"),
    [
        (FileCreatedEvent("/notes/a.md"), [Change("index", "/notes", "a.md")]),
        (FileModifiedEvent("/notes/sub/b.md"), [Change("index", "/notes", "sub/b.md")]),
        (FileModifiedEvent("/notes/.git/index"), []),  # an ignored folder
        (FileModifiedEvent("/notes/x.tmp"), []),  # an ignored name
        (FileModifiedEvent("/elsewhere/a.md"), []),  # outside the root
        (FileModifiedEvent("/notes"), []),  # the root itself
        (FileOpenedEvent("/notes/a.md"), []),  # reads change nothing
        (FileClosedNoWriteEvent("/notes/a.md"), []),
        (DirDeletedEvent("/notes/sub"), [Change("remove", "/notes", "sub")]),
        (DirCreatedEvent("/notes/new"), [Change("scan", "/notes", "new")]),
        (FileMovedEvent("/notes/a.md", "/notes/b.md"), [Change("move", "/notes", "a.md", "b.md")]),
        (DirMovedEvent("/notes/sub", "/notes/moved"), [Change("move", "/notes", "sub", "moved")]),
        # an atomic save: a temporary (ignored) file renamed onto the note
        (FileMovedEvent("/notes/a.md.tmp", "/notes/a.md"), [Change("index", "/notes", "a.md")]),
        # moved out of the root or into an ignored name: gone
        (FileMovedEvent("/notes/a.md", "/elsewhere/a.md"), [Change("index", "/notes", "a.md")]),
        (DirMovedEvent("/notes/sub", "/notes/.git/sub"), [Change("remove", "/notes", "sub")]),
        # moved in from outside: a folder arrives full
        (DirMovedEvent("/elsewhere/sub", "/notes/sub"), [Change("scan", "/notes", "sub")]),
        (FileMovedEvent("/notes/a.tmp", "/notes/b.tmp"), []),
    ],
)
def test_changes_for(event, expected):
    assert changes_for(event, ROOT, SPEC) == expected


def test_changes_for_bytes_paths():
    assert changes_for(FileCreatedEvent(b"/notes/a.md"), ROOT, SPEC) == [Change("index", "/notes", "a.md")]


def test_describe_watch():
    now = datetime.datetime(2025, 1, 2, 12, 0, tzinfo=datetime.UTC)
    seen = now - datetime.timedelta(seconds=30)
    event = now - datetime.timedelta(minutes=5)
    assert describe_watch(None, None, None, now) == "not watched yet"
    assert describe_watch("events", seen, None, now) == "watched by events (inotify), last change seen none yet"
    assert describe_watch("polling", seen, event, now) == (
        "watched by polling (inotify limit reached), last change seen 2025-01-02 11:55:00+00:00"
    )
    stale = now - datetime.timedelta(hours=1)
    assert describe_watch("events", stale, event, now).startswith("not watched now (last watched by events")


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
                    await asyncio.wait_for(watcher.started.wait(), 10)
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


def test_other_errors_are_not_taken_for_the_limit(tmp_path):
    class Broken(Observer):
        def schedule(self, handler, path, **kwargs):
            raise OSError(errno.EACCES, "Permission denied")

    async def scenario():
        watcher = Watcher(None, [tmp_path], observer_factory=Broken)
        with pytest.raises(PermissionError):
            watcher.start()
        assert all(state.observer is None for state in watcher.states.values())

    asyncio.run(scenario())


def test_a_dead_observer_stops_the_watchdog_pings(tmp_path):
    """The watcher's loop pings systemd only while its observers live: a dead one ends the loop."""

    class Dying(Observer):
        pass

    pings = []
    observers = []

    def factory():
        observer = Dying()
        observers.append(observer)
        return observer

    async def scenario():
        watcher = Watcher(None, [tmp_path], tick_seconds=0.05, alive=lambda: pings.append(1), observer_factory=factory)
        running = asyncio.create_task(watcher.run())
        await asyncio.wait_for(watcher.started.wait(), 5)
        while len(pings) < 3:
            await asyncio.sleep(0.05)
        await asyncio.to_thread(observers[0].stop)  # the observer thread ends, as when it crashes
        with pytest.raises(watch.WatcherDied):
            await asyncio.wait_for(running, 5)
        count = len(pings)
        await asyncio.sleep(0.3)
        assert len(pings) == count
        assert not any(thread.name.startswith("Dying") for thread in threading.enumerate())

    asyncio.run(scenario())
