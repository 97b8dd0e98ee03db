"""The watcher: what an event means (pure), errors that are not the inotify limit, a dead observer.

The fallback to polling at the inotify limit is in tests/integration/test_watch.py.
"""

from __future__ import annotations

import asyncio
import datetime
import errno
import threading
from pathlib import Path

import pytest
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

from pgrecall.worker import scan, watch
from pgrecall.worker.watch import Change, Watcher, changes_for, describe_watch

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


def test_describe_watch_says_watched_only_while_a_watcher_holds_the_root():
    seen = datetime.datetime(2025, 1, 2, 11, 59, 30, tzinfo=datetime.UTC)
    event = datetime.datetime(2025, 1, 2, 11, 55, tzinfo=datetime.UTC)
    assert describe_watch(None, None, None, False) == "not watched (no serve or watch has followed it yet)"
    assert describe_watch("events", seen, None, True) == "watched by events (inotify), last change seen none yet"
    assert describe_watch("polling", seen, event, True) == (
        "watched by polling (inotify limit reached), last change seen 2025-01-02 11:55:00+00:00"
    )
    assert describe_watch("events", seen, event, False) == (
        "not watched now (last watched by events (inotify) until 2025-01-02 11:59:30+00:00), "
        "last change seen 2025-01-02 11:55:00+00:00"
    )


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
        await asyncio.wait_for(watcher.started.wait(), 60)
        while len(pings) < 3:
            await asyncio.sleep(0.05)
        await asyncio.to_thread(observers[0].stop)  # the observer thread ends, as when it crashes
        with pytest.raises(watch.WatcherDied):
            await asyncio.wait_for(running, 60)
        count = len(pings)
        await asyncio.sleep(0.3)
        assert len(pings) == count
        assert not any(thread.name.startswith("Dying") for thread in threading.enumerate())

    asyncio.run(scenario())
