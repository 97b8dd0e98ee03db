"""The MCP server end to end, through the SDK's own client over stdio."""

import asyncio
import concurrent.futures
import json
import os
import sys
import threading
import time

import pytest
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters

from pgrecall.api.search import Searcher
from pgrecall.api.startup import NotStarted, Startup
from tests.notes import ERROR_CODE_NOTES, write_notes


def test_search_memory_and_get_document_over_stdio(index, db_url, tmp_path):
    index(write_notes(tmp_path / "notes", ERROR_CODE_NOTES))
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "pgrecall.cli", "mcp"],
        env={
            **os.environ,
            "PGRECALL_DATABASE_URL": db_url,
            "PGRECALL_HOME": str(tmp_path / "home"),
            "PGRECALL_LOG_FORMAT": "json",
        },
    )

    async def session():
        async with Client(params) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert set(tools) == {"search_memory", "get_document"}
            assert "notes" in tools["search_memory"].description
            assert tools["search_memory"].annotations.read_only_hint

            await client.call_tool("search_memory", {"query": "warm up", "k": 1})
            started = time.perf_counter()
            result = await client.call_tool("search_memory", {"query": "E-4711", "k": 2})
            elapsed_ms = (time.perf_counter() - started) * 1000
            hits = (result.structured_content or json.loads(result.content[0].text))["hits"]
            assert hits[0]["path"] == "incidents/e4711.md"
            assert {"path", "heading", "text", "score"} <= set(hits[0])

            document = await client.call_tool("get_document", {"id_or_path": str(hits[0]["document_id"])})
            body = document.structured_content or json.loads(document.content[0].text)
            assert body["path"] == "incidents/e4711.md" and "E-4711" in body["text"]

            missing = await client.call_tool("get_document", {"id_or_path": "no/such.md"})
            assert missing.is_error
            return elapsed_ms

    elapsed_ms = asyncio.run(session())
    print(f"MCP search_memory round trip: {elapsed_ms:.1f} ms")


def _server(env_extra: dict[str, str], tmp_path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "pgrecall.cli", "mcp"],
        env={**os.environ, "PGRECALL_HOME": str(tmp_path / "home"), "PGRECALL_LOG_FORMAT": "json", **env_extra},
    )


def _error_text(result) -> str:
    assert result.is_error
    return result.content[0].text


def test_bad_input_gets_a_tool_error_with_its_reason(db_url, tmp_path):
    """These used to end in "Error executing tool search_memory", no reason (a psycopg DataError)."""
    cases = [
        ({"query": "a\x00b"}, "the query must not contain a NUL character"),
        ({"query": "x", "filters": {"path_prefix": "\x00"}}, "filter path_prefix must not contain a NUL"),
        ({"query": "x", "filters": {"kind": "\x00"}}, "filter kind must not contain a NUL"),
        ({"query": "x", "filters": {"root": "\x00"}}, "filter root must not contain a NUL"),
        ({"query": "x", "filters": {"source_root": "\x00"}}, "filter source_root must not contain a NUL"),
        ({"query": "x", "filters": {"metadata": {"a": "\x00"}}}, "filter metadata.a must not contain a NUL"),
    ]

    async def session():
        async with Client(_server({"PGRECALL_DATABASE_URL": db_url}, tmp_path)) as client:
            for arguments, reason in cases:
                text = _error_text(await client.call_tool("search_memory", {"k": 1, **arguments}))
                assert reason in text and "\n" not in text, text
            text = _error_text(await client.call_tool("get_document", {"id_or_path": "a\x00.md"}))
            assert "the document path must not contain a NUL" in text

    asyncio.run(session())


def test_handshake_is_answered_before_the_database_and_a_failed_start_says_why(tmp_path):
    """A garbage search URL: initialize still answers; the tool call gets the cause in one line, at once."""

    async def session():
        started = time.perf_counter()
        async with Client(_server({"PGRECALL_SEARCH_DATABASE_URL": "garbage"}, tmp_path)) as client:
            initialized = time.perf_counter() - started
            sent = time.perf_counter()
            text = _error_text(await client.call_tool("search_memory", {"query": "x"}))
            answered = time.perf_counter() - sent
        return initialized, text, answered

    initialized, text, answered = asyncio.run(session())
    assert 'pgrecall could not start: invalid connection string for the search database: missing "="' in text
    assert "\n" not in text
    assert answered < 10 and initialized < 10  # not the pool's 30 s


def test_a_call_before_the_start_finishes_waits_for_it(settings, db_url, embedder):
    release = threading.Event()

    def build():
        release.wait(10)
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
