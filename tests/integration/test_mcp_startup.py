"""The MCP server's start in process: a call made before the start finishes waits for it, a failed start is retried."""

import concurrent.futures
import threading
import time

import pytest

from pgrecall.api.searcher import Searcher
from pgrecall.api.startup import NotStarted, Startup


def test_a_call_before_the_start_finishes_waits_for_it(settings, db_url, embedder):
    release = threading.Event()

    def build():
        release.wait(120)  # a hang guard: the test sets it
        return Searcher(db_url, settings, embedder=embedder, pool_size=1)

    startup = Startup(build)
    startup.start()
    try:
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            waiting = pool.submit(startup.get)
            time.sleep(0.3)
            assert not waiting.done()  # waits; neither fails nor answers early
            release.set()
            assert waiting.result(timeout=60).search("anything", k=1) == []
    finally:
        release.set()
        startup.close()


def test_a_failed_start_is_retried_by_the_next_call(settings, db_url, embedder):
    urls = iter(["host=/nonexistent/socket dbname=pgrecall", db_url])
    startup = Startup(lambda: Searcher(next(urls), settings, embedder=embedder, pool_size=1))
    startup.start()
    try:
        with pytest.raises(NotStarted, match="pgrecall could not start: cannot connect to the search database"):
            startup.get(timeout=30)
        assert startup.get(timeout=60).health()["documents"] == 0
    finally:
        startup.close()
