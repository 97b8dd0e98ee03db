"""Filesystem events into jobs: watchdog in a thread, debounced on the event loop.

Jobs look at the disk when they run, not at the event that caused them: a
created, modified or deleted file all become "index this path", which indexes
what is there or removes what is gone. That makes editors' save dances (temp
files, renames, backup copies) harmless: only the final state is read. A burst
of saves is collapsed twice: here, by waiting for a quiet moment, and in the
queue, by the queueing lock that allows one waiting job per path.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from pathlib import Path

import pathspec
import procrastinate
import psycopg
import structlog
from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

from pgrecall.worker import scan, tasks

log = structlog.get_logger("pgrecall.watch")


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
    if source in (None, "."):
        return []
    suffix = "/" if event.is_directory else ""
    tracked = not scan.is_ignored(source + suffix, spec)
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


class _Handler(FileSystemEventHandler):
    def __init__(self, watcher: Watcher, root: Path):
        self.watcher = watcher
        self.root = root
        self.spec = scan.load_ignore(root)

    def on_any_event(self, event: FileSystemEvent) -> None:
        for change in changes_for(event, self.root, self.spec):
            self.watcher.submit(change)


class Watcher:
    def __init__(self, app: procrastinate.App, roots: list[Path], debounce_seconds: float = 0.5):
        self.app = app
        self.roots = [root.resolve() for root in roots]
        self.debounce_seconds = debounce_seconds
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pending: dict[tuple[str, str, str], tuple[Change, float]] = {}
        self._wakeup = asyncio.Event()
        self._observer = None
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

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._observer = Observer()
        for root in self.roots:
            self._observer.schedule(_Handler(self, root), str(root), recursive=True)
        self._observer.start()
        log.info("watch_started", roots=[str(r) for r in self.roots])

    def stop(self) -> None:
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(timeout=5)
            self._observer = None

    async def run(self) -> None:
        """Enqueue each change once it has been quiet for the debounce interval."""
        self.start()
        try:
            while True:
                await self._wakeup.wait()
                self._wakeup.clear()
                while self._pending:
                    now = time.monotonic()
                    due = [key for key, (_, seen) in self._pending.items() if now - seen >= self.debounce_seconds]
                    for key in due:
                        change, seen = self._pending.pop(key)
                        try:
                            await self._enqueue(change)
                        except (psycopg.OperationalError, procrastinate.exceptions.ConnectorException) as exc:
                            # The database is away (restarting): keep the change and try again.
                            self._pending.setdefault(key, (change, seen))
                            log.warning(
                                "enqueue_failed",
                                path=change.path,
                                error=str(exc).splitlines()[0] if str(exc) else type(exc).__name__,
                            )
                            await asyncio.sleep(1.0)
                            break
                    if self._pending:
                        oldest = min(seen for _, seen in self._pending.values())
                        await asyncio.sleep(max(0.01, self.debounce_seconds - (time.monotonic() - oldest)))
        finally:
            self.stop()

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
