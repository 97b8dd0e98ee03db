"""The search side (and the memory client) started in the background, for servers that must answer at once.

What the servers are handed is a Lazy[T]: something with get(), which returns
the service once it is ready, and close(). A Startup is one; Ready is one for a
service already built (tests, a caller that opened it first).

`pgrecall mcp` answers the MCP handshake before the database has started and
the model has loaded (clients time out servers that are slow to answer): a
Startup builds the searcher (database, pool) in one thread while another loads
the model; a second Startup builds the memory client (pgrecall.worker, which
the caller's `build` imports: this module does not). A caller that needs what
a Startup builds waits for it; the first that comes after a failed start gets
the cause, and the next starts it again (the cause may be gone by then). A Startup never started is started by its first
caller (`pgrecall api` opens its memory client on the first write). Imports
nothing heavy, so a process can begin the start before it imports its server
framework.
"""

from __future__ import annotations

import concurrent.futures
import threading
import time
from collections.abc import Callable
from typing import Any, Generic, Protocol, TypeVar

import structlog

from pgrecall.errors import PgRecallError, reason

START_WAIT_S = 120.0  # how long a caller waits for the start before giving up

log = structlog.get_logger(__name__)


class NotStarted(PgRecallError):
    """pgrecall could not start."""


T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)


class Lazy(Protocol[T_co]):
    def get(self) -> T_co: ...

    def close(self) -> None: ...


class Ready(Generic[T]):
    """A Lazy of a service already built."""

    def __init__(self, service: T):
        self._service = service

    def get(self) -> T:
        return self._service

    def close(self) -> None:
        self._service.close()  # type: ignore[attr-defined]


def warm_searcher(searcher: Any) -> None:
    searcher.search("pgrecall", k=1)  # warms the model and the pool's connection


class Startup(Generic[T]):
    """Builds a searcher (or another closeable service) in a background thread while another runs
    `preload` (the model); `warm` is then called on it before any caller gets it."""

    def __init__(
        self,
        build: Callable[[], T],
        preload: Callable[[], object] | None = None,
        warm: Callable[[T], object] | None = warm_searcher,
        name: str = "search",
        what: str = "database and model",
    ):
        self._build = build
        self._preload = preload
        self._warm = warm
        self._name = name
        self._what = what
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._thread: threading.Thread | None = None
        self._searcher: T | None = None
        self._error: str | None = None
        self._reported = False  # the failure has reached a caller: the next one starts again

    def start(self) -> None:
        """Start in the background, unless a start is under way or has succeeded."""
        with self._lock:
            if self._thread is not None and (not self._done.is_set() or self._error is None):
                return
            self._error = None
            self._reported = False
            self._done.clear()
            self._thread = threading.Thread(target=self._run, name="pgrecall-start", daemon=True)
            self._thread.start()

    def get(self, timeout: float = START_WAIT_S) -> T:
        """What was built, once started; NotStarted with the cause when the start failed."""
        if self._thread is None or (self._done.is_set() and self._error is not None and self._reported):
            self.start()  # never started (a lazy Startup), or the cause may be gone by now
        deadline = time.monotonic() + timeout
        while True:
            if not self._done.wait(max(0.0, deadline - time.monotonic())):
                raise NotStarted(f"pgrecall is still starting ({self._what}) after {timeout:.0f} s; try again")
            with self._lock:
                searcher, error = self._searcher, self._error
            if searcher is not None:
                return searcher
            if error is not None:
                self._reported = True
                raise NotStarted(f"pgrecall could not start: {error}")
            # Another caller started it again meanwhile: wait for that start.

    def wait(self, timeout: float = START_WAIT_S) -> bool:
        """Wait for a start under way to end, whatever its outcome; False when none ended in time."""
        return self._thread is not None and self._done.wait(timeout)

    def close(self) -> None:
        if self._searcher is not None:
            self._searcher.close()  # type: ignore[attr-defined]

    def _run(self) -> None:
        started = time.perf_counter()
        try:
            model = _in_background(self._preload)  # seconds of imports, while the database starts
            searcher = self._build()
            try:
                model.result()
                if self._warm is not None:
                    self._warm(searcher)
            except BaseException:
                searcher.close()  # type: ignore[attr-defined]
                raise
            self._searcher = searcher
            log.info(f"{self._name}_ready", seconds=round(time.perf_counter() - started, 2))
        except Exception as exc:  # any failure must reach the caller as its reason, not as a hang
            self._error = reason(exc)
            log.error(f"{self._name}_start_failed", error=self._error)
        finally:
            self._done.set()


def _in_background(work: Callable[[], object] | None) -> concurrent.futures.Future:
    future: concurrent.futures.Future = concurrent.futures.Future()

    def run() -> None:
        try:
            future.set_result(work() if work is not None else None)
        except BaseException as exc:
            future.set_exception(exc)

    threading.Thread(target=run, name="pgrecall-model", daemon=True).start()
    return future
