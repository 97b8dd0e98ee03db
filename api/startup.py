"""The search side started in the background, for servers that must answer at once.

`pgrecall mcp` answers the MCP handshake before the database has started and
the model has loaded (clients time out servers that are slow to answer): a
Startup builds the searcher (database, migrations, pool) in one thread while
another loads the model. A caller that needs the searcher before then waits for
it; one that comes after a failed start gets the cause, and starts it again.
Imports nothing heavy, so a process can begin the start before it imports its
server framework.
"""

from __future__ import annotations

import concurrent.futures
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import structlog

from pgrecall.errors import PgRecallError

if TYPE_CHECKING:
    from pgrecall.api.search import Searcher

START_WAIT_S = 120.0  # how long a caller waits for the start before giving up

log = structlog.get_logger(__name__)


class NotStarted(PgRecallError):
    """pgrecall could not start."""


class Startup:
    """Builds the searcher in a background thread while another runs `preload` (the model)."""

    def __init__(self, build: Callable[[], Searcher], preload: Callable[[], object] | None = None):
        self._build = build
        self._preload = preload
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._thread: threading.Thread | None = None
        self._searcher: Searcher | None = None
        self._error: str | None = None

    def start(self) -> None:
        """Start in the background, unless a start is under way or has succeeded."""
        with self._lock:
            if self._thread is not None and (not self._done.is_set() or self._error is None):
                return
            self._error = None
            self._done.clear()
            self._thread = threading.Thread(target=self._run, name="pgrecall-start", daemon=True)
            self._thread.start()

    def get(self, timeout: float = START_WAIT_S) -> Searcher:
        """The searcher, once started; NotStarted with the cause when the start failed."""
        if self._done.is_set() and self._error is not None:
            self.start()  # the cause may be gone by now (a database started since)
        deadline = time.monotonic() + timeout
        while True:
            if not self._done.wait(max(0.0, deadline - time.monotonic())):
                raise NotStarted(f"pgrecall is still starting (database and model) after {timeout:.0f} s; try again")
            with self._lock:
                searcher, error = self._searcher, self._error
            if searcher is not None:
                return searcher
            if error is not None:
                raise NotStarted(f"pgrecall could not start: {error}")
            # Another caller started it again meanwhile: wait for that start.

    def close(self) -> None:
        if self._searcher is not None:
            self._searcher.close()

    def _run(self) -> None:
        started = time.perf_counter()
        try:
            model = _in_background(self._preload)  # seconds of imports, while the database starts
            searcher = self._build()
            try:
                model.result()
                searcher.search("pgrecall", k=1)  # warms the model and the pool's connection
            except BaseException:
                searcher.close()
                raise
            self._searcher = searcher
            log.info("search_ready", seconds=round(time.perf_counter() - started, 2))
        except Exception as exc:  # any failure must reach the caller as its reason, not as a hang
            self._error = reason(exc)
            log.error("search_start_failed", error=self._error)
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


def reason(exc: BaseException) -> str:
    """One line: our errors' message as it is, others with their type."""
    text = (str(exc).strip().splitlines() or [""])[0]
    if isinstance(exc, PgRecallError):
        return text
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
