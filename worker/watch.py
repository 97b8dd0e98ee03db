"""Filesystem events into jobs: watchdog in a thread, debounced on the event loop.

Jobs look at the disk when they run, not at the event that caused them: a
created, modified or deleted file all become "index this path", which indexes
what is there or removes what is gone. That makes editors' save dances (temp
files, renames, backup copies) harmless: only the final state is read. A burst
of saves is collapsed twice: here, by waiting for a quiet moment, and in the
queue, by the queueing lock that allows one waiting job per path.

Each root has its own observer: inotify events where the kernel allows, and
polling for a root whose watches would exceed the kernel's inotify limits
(said once, in the log and in `pgrecall status`), so that no change is missed
silently. The watcher's loop wakes at least every `tick_seconds`, checks that
its observers are alive, and calls `alive()`: the service's systemd watchdog
ping, which therefore stops when the watcher is stuck or dead.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime
import errno
import time
from collections.abc import Callable
from pathlib import Path

import pathspec
import procrastinate
import psycopg
import structlog
from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer
from watchdog.observers.polling import PollingObserver

from pgrecall.errors import first_line
from pgrecall.postgres import queries
from pgrecall.worker import scan, tasks
from pgrecall.worker.watch_lease import WatchLease

log = structlog.get_logger("pgrecall.watch")
Q = queries.load("service.sql")

# inotify_add_watch: ENOSPC, fs.inotify.max_user_watches reached;
# inotify_init: EMFILE, fs.inotify.max_user_instances reached.
INOTIFY_LIMIT_ERRNOS = frozenset({errno.ENOSPC, errno.EMFILE})
EVENTS, POLLING = "events", "polling"


@dataclasses.dataclass(frozen=True)
class Change:
    kind: str  # "index", "remove" (a folder), "move", "scan" (a folder that appeared)
    root: str
    path: str
    destination: str | None = None


def _relative(root: Path, raw: str | bytes) -> str | None:
    path = Path(raw.decode() if isinstance(raw, bytes) else raw)
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return None


def changes_for(event: FileSystemEvent, root: Path, spec: pathspec.PathSpec) -> list[Change]:
    """What an event means for the index. Pure: no I/O."""
    root_text = str(root)
    source = _relative(root, event.src_path)
    if source == "." or (source is None and event.event_type != "moved"):
        return []
    suffix = "/" if event.is_directory else ""
    tracked = source is not None and not scan.is_ignored(source + suffix, spec)  # None: moved in from outside
    if event.event_type == "moved":
        destination = _relative(root, event.dest_path)
        tracked_destination = destination not in (None, ".") and not scan.is_ignored(destination + suffix, spec)
        if tracked and tracked_destination:
            return [Change("move", root_text, source, destination)]
        changes = []
        if tracked:  # moved away or into an ignored name: gone from the index
            changes.append(Change("remove" if event.is_directory else "index", root_text, source))
        if tracked_destination:  # an atomic save: temp file renamed onto the note
            changes.append(Change("scan" if event.is_directory else "index", root_text, destination))
        return changes
    if not tracked or event.event_type in ("opened", "closed_no_write"):
        return []
    if event.is_directory:
        if event.event_type == "deleted":
            return [Change("remove", root_text, source)]
        if event.event_type == "created":  # may arrive full, moved in from outside the root
            return [Change("scan", root_text, source)]
        return []
    return [Change("index", root_text, source)]


def is_inotify_limit(exc: OSError) -> bool:
    return exc.errno in INOTIFY_LIMIT_ERRNOS


class _Handler(FileSystemEventHandler):
    def __init__(self, watcher: Watcher, state: RootWatch):
        self.watcher = watcher
        self.state = state
        self.spec = scan.load_ignore(state.path)

    def on_any_event(self, event: FileSystemEvent) -> None:
        changes = changes_for(event, self.state.path, self.spec)
        if changes:
            self.state.last_event = time.time()  # a float assignment: safe from watchdog's thread
        for change in changes:
            self.watcher.submit(change)


@dataclasses.dataclass
class RootWatch:
    """One root's observer and what the watcher knows of it."""

    path: Path
    mode: str = EVENTS
    observer: object | None = None
    last_event: float | None = None  # wall clock of the last change seen (set from watchdog's thread)
    recorded_mode: str | None = None
    recorded_event: float | None = None
    recorded_at: float = 0.0  # monotonic


class Watcher:
    def __init__(
        self,
        app: procrastinate.App,
        roots: list[Path],
        debounce_seconds: float = 0.5,
        *,
        pool=None,
        alive: Callable[[], object] | None = None,
        tick_seconds: float = 5.0,
        polling_seconds: float = 5.0,
        record_seconds: float = 5.0,
        seen_seconds: float = 60.0,
        observer_factory: Callable[[], object] = Observer,
        polling_factory: Callable[..., object] = PollingObserver,
    ):
        self.app = app
        self.roots = [root.resolve() for root in roots]
        self.debounce_seconds = debounce_seconds
        self.pool = pool  # where the watch state of each root is recorded (pgrecall.roots); None: nowhere
        self.alive = alive
        self.tick_seconds = tick_seconds
        self.polling_seconds = polling_seconds
        self.record_seconds = record_seconds  # at most one write per root this often, for events
        self.seen_seconds = seen_seconds  # and one at least this often, to say the watcher runs
        self.observer_factory = observer_factory
        self.polling_factory = polling_factory
        self.states = {root: RootWatch(root) for root in self.roots}
        self.started = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pending: dict[tuple[str, str, str], tuple[Change, float]] = {}
        self._wakeup = asyncio.Event()
        self.enqueued = 0

    def submit(self, change: Change) -> None:
        """Called from watchdog's thread."""
        assert self._loop is not None
        self._loop.call_soon_threadsafe(self._add, change)

    def _add(self, change: Change) -> None:
        if change.kind == "move" and self._covered_by_folder_move(change):
            return  # watchdog repeats a folder move for every file in it
        self._pending[(change.kind, change.root, change.path)] = (change, time.monotonic())
        self._wakeup.set()

    def _covered_by_folder_move(self, change: Change) -> bool:
        for (kind, root, path), (pending, _) in self._pending.items():
            if kind == "move" and root == change.root and change.path.startswith(path + "/"):
                relative = change.path[len(path) :]
                if change.destination == f"{pending.destination}{relative}":
                    return True
        return False

    @property
    def modes(self) -> dict[str, str]:
        return {str(path): state.mode for path, state in self.states.items()}

    def _observe(self, state: RootWatch, factory: Callable[[], object]):
        observer = factory()
        try:
            observer.schedule(_Handler(self, state), str(state.path), recursive=True)
            observer.start()
        except BaseException:
            _stop_observer(observer)
            raise
        return observer

    def _start_root(self, state: RootWatch) -> None:
        try:
            state.observer = self._observe(state, self.observer_factory)
            state.mode = EVENTS
        except OSError as exc:
            if not is_inotify_limit(exc):
                raise
            if state.mode != POLLING:  # said once per root, not again at each restart of the watcher
                log.warning(
                    "inotify_limit_reached",
                    root=str(state.path),
                    error=f"{errno.errorcode.get(exc.errno, exc.errno)}: {exc.strerror}",
                    fallback=POLLING,
                    polling_seconds=self.polling_seconds,
                    hint="raise fs.inotify.max_user_watches / max_user_instances (sysctl) to watch by events",
                )
            state.observer = self._observe(state, lambda: self.polling_factory(timeout=self.polling_seconds))
            state.mode = POLLING

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        try:
            for state in self.states.values():
                self._start_root(state)
        except BaseException:
            self.stop()
            raise
        log.info("watch_started", roots=[str(r) for r in self.roots], modes=self.modes)

    def stop(self) -> None:
        self.started.clear()
        for state in self.states.values():
            if state.observer is not None:
                _stop_observer(state.observer)
                state.observer = None

    def check(self) -> None:
        """Raise if an observer thread died: the supervisor starts the watcher again."""
        for state in self.states.values():
            if state.observer is None or not state.observer.is_alive():
                raise WatcherDied(f"the {state.mode} observer of {state.path} stopped")

    async def run(self) -> None:
        """Enqueue each change once it has been quiet for the debounce interval; wake at least every tick."""
        self.start()
        self.started.set()
        lease = WatchLease(self.pool.conninfo, self.roots) if self.pool is not None else None
        try:
            await self._record_state()
            while True:
                self.check()
                if self.alive is not None:
                    self.alive()
                await self._flush_due()
                await self._record_state()
                if lease is not None:
                    await lease.hold()
                await self._sleep()
        finally:
            self.stop()
            if lease is not None:
                await lease.release()

    async def _sleep(self) -> None:
        timeout = self.tick_seconds
        if self._pending:
            oldest = min(seen for _, seen in self._pending.values())
            timeout = min(timeout, max(0.01, self.debounce_seconds - (time.monotonic() - oldest)))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wakeup.wait(), timeout)
        self._wakeup.clear()

    async def _flush_due(self) -> None:
        now = time.monotonic()
        due = [key for key, (_, seen) in self._pending.items() if now - seen >= self.debounce_seconds]
        for key in due:
            change, seen = self._pending.pop(key)
            try:
                await self._enqueue(change)
            except (psycopg.OperationalError, procrastinate.exceptions.ConnectorException) as exc:
                # The database is away (restarting): keep the change and try again.
                self._pending.setdefault(key, (change, seen))
                log.warning("enqueue_failed", path=change.path, error=first_line(exc))
                await asyncio.sleep(1.0)
                return

    async def _record_state(self) -> None:
        """Write each root's watch mode and last change to pgrecall.roots, throttled."""
        if self.pool is None:
            return
        now = time.monotonic()
        for state in self.states.values():
            mode_changed = state.mode != state.recorded_mode
            news = state.last_event != state.recorded_event and now - state.recorded_at >= self.record_seconds
            if not (mode_changed or news or now - state.recorded_at >= self.seen_seconds):
                continue
            last_event = state.last_event
            params = {"path": str(state.path), "mode": state.mode, "last_event_at": _timestamp(last_event)}
            try:
                async with self.pool.connection(timeout=2.0) as conn:
                    if mode_changed:
                        await conn.execute(Q["set_watch_mode"], params)
                    await conn.execute(Q["touch_watcher"], params)
            except psycopg.Error as exc:  # the database is away: a later tick tries again
                log.debug("watch_state_not_recorded", root=str(state.path), error=first_line(exc))
                return
            state.recorded_mode, state.recorded_event, state.recorded_at = state.mode, last_event, now

    async def _enqueue(self, change: Change) -> None:
        if change.kind == "move":
            added = await tasks.enqueue_move(self.app, change.root, change.path, change.destination or "")
        elif change.kind == "remove":
            added = await tasks.enqueue(self.app, tasks.REMOVE_TASK, change.root, [change.path])
        elif change.kind == "scan":
            prefix = change.path + "/"
            every = await asyncio.to_thread(lambda: list(scan.iter_files(Path(change.root))))
            paths = [p for p in every if p.startswith(prefix)]
            added = await tasks.enqueue(self.app, tasks.INDEX_TASK, change.root, paths)
        else:
            added = await tasks.enqueue(self.app, tasks.INDEX_TASK, change.root, [change.path])
        self.enqueued += added
        log.debug("change_enqueued", kind=change.kind, root=change.root, path=change.path, jobs=added)


class WatcherDied(RuntimeError):
    """An observer thread of the watcher stopped."""


def _timestamp(wall: float | None) -> datetime.datetime | None:
    return None if wall is None else datetime.datetime.fromtimestamp(wall, datetime.UTC)


def _stop_observer(observer) -> None:
    observer.stop()
    if observer.is_alive():
        observer.join(timeout=5)


def describe_watch(
    mode: str | None, seen_at: datetime.datetime | None, last_event_at: datetime.datetime | None, watched: bool
) -> str:
    """How `pgrecall status` says a root is watched; `watched`: a running watcher holds its lock
    (pgrecall.worker.watch_lease), `seen_at`: when one last said it watched it."""
    last = last_event_at.isoformat(sep=" ", timespec="seconds") if last_event_at else "none yet"
    how = "by events (inotify)" if mode == EVENTS else "by polling (inotify limit reached)"
    if watched:
        return f"watched {how}, last change seen {last}"
    if mode is None or seen_at is None:
        return "not watched (no serve or watch has followed it yet)"
    until = seen_at.isoformat(sep=" ", timespec="seconds")
    return f"not watched now (last watched {how} until {until}), last change seen {last}"
