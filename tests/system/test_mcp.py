"""The MCP server end to end, through the SDK's own client over stdio."""

import asyncio
import json
import os
import subprocess
import time

import pytest
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types import Implementation

from pgrecall import contract
from tests.notes import ERROR_CODE_NOTES, write_notes
from tests.support.cli import COMMAND, run_cli

MEMORY_TOOLS = {"remember", "update_memory", "forget", "restore_memory", "list_memories", "memory_history"}


def test_search_memory_and_get_document_over_stdio(index, db_url, tmp_path):
    index(write_notes(tmp_path / "notes", ERROR_CODE_NOTES))
    params = StdioServerParameters(
        command=COMMAND[0],
        args=[*COMMAND[1:], "mcp"],
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
            assert set(tools) == {"search_memory", "get_document", "recent_memories", *MEMORY_TOOLS}
            assert "notes" in tools["search_memory"].description
            assert tools["search_memory"].annotations.read_only_hint

            await client.call_tool("search_memory", {"query": "warm up", "k": 1})
            started = time.perf_counter()
            result = await client.call_tool("search_memory", {"query": "E-4711", "k": 2})
            elapsed_ms = (time.perf_counter() - started) * 1000
            hits = (result.structured_content or json.loads(result.content[0].text))["hits"]
            assert hits[0]["path"] == "incidents/e4711.md"
            assert list(hits[0]) == list(contract.HIT_FIELDS)  # Hit.to_json(), as the CLI and HTTP give it
            assert hits[0]["arm_scores"] is not None  # convex, the default fusion
            by_rank = await client.call_tool("search_memory", {"query": "E-4711", "k": 2, "fusion": "rrf"})
            by_rank_hits = (by_rank.structured_content or json.loads(by_rank.content[0].text))["hits"]
            assert by_rank_hits[0]["path"] == "incidents/e4711.md" and by_rank_hits[0]["arm_scores"] is None

            document = await client.call_tool("get_document", {"id_or_path": str(hits[0]["document_id"])})
            body = document.structured_content or json.loads(document.content[0].text)
            assert body["path"] == "incidents/e4711.md" and "E-4711" in body["text"]

            missing = await client.call_tool("get_document", {"id_or_path": "no/such.md"})
            assert missing.is_error
            return elapsed_ms

    elapsed_ms = asyncio.run(session())
    print(f"MCP search_memory round trip: {elapsed_ms:.1f} ms")


def _server(env_extra: dict[str, str], tmp_path, *args: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=COMMAND[0],
        args=[*COMMAND[1:], "mcp", *args],
        env={
            **os.environ,
            "PGRECALL_HOME": str(tmp_path / "home"),
            "PGRECALL_LOG_FORMAT": "json",
            "PGRECALL_CONFIG": str(tmp_path / "no-config.toml"),
            **env_extra,
        },
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
    # The index's URL cannot connect either (the memory client's start fails at once too).
    env = {"PGRECALL_SEARCH_DATABASE_URL": "garbage", "PGRECALL_DATABASE_URL": "host=/nonexistent/socket"}

    async def session():
        async with Client(_server(env, tmp_path)) as client:
            return _error_text(await client.call_tool("search_memory", {"query": "x"}))

    text = asyncio.run(asyncio.wait_for(session(), 120))  # a hang guard
    # The cause, not the pool's "initialization incomplete" after its 30 s timeout.
    assert 'pgrecall could not start: invalid connection string for the search database: missing "="' in text
    assert "\n" not in text


def _json(result) -> dict:
    assert not result.is_error, result.content[0].text
    return result.structured_content or json.loads(result.content[0].text)


ORIGINAL = "The zorblax cache expires after 17 minutes because the upstream quota resets hourly."
UPDATED = "The zorblax cache expires after 5 minutes since the upstream quota became per minute."


def test_remember_search_update_forget_over_stdio(index, db_url, tmp_path):
    """remember -> search_memory finds it first -> update_memory -> the new text is found, the old is not
    -> forget -> gone from search and from disk; the source is the client's name from the handshake."""
    index(write_notes(tmp_path / "notes", ERROR_CODE_NOTES))
    folder = tmp_path / "home" / "memories"
    info = Implementation(name="pgrecall-test-client", version="1.0")

    async def session():
        async with Client(_server({"PGRECALL_DATABASE_URL": db_url}, tmp_path), client_info=info) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert set(tools) >= MEMORY_TOOLS
            for name in ("remember", "update_memory", "forget"):
                assert tools[name].annotations.read_only_hint is False, name
            assert tools["forget"].annotations.destructive_hint is True
            assert tools["list_memories"].annotations.read_only_hint is True
            assert "search_memory first" in tools["remember"].description
            assert "why" in tools["remember"].description and "secrets" in tools["remember"].description

            memory = _json(
                await client.call_tool("remember", {"text": ORIGINAL, "tags": ["ops"], "metadata": {"team": "core"}})
            )
            assert memory["new"] and memory["indexed"] and memory["source"] == "pgrecall-test-client"
            assert (folder / memory["path"]).is_file()
            hits = _json(await client.call_tool("search_memory", {"query": "when does the zorblax cache expire?"}))
            assert hits["hits"][0]["path"] == memory["path"]
            assert hits["hits"][0]["source_root"] == str(folder.resolve())
            listed = _json(await client.call_tool("list_memories", {"tags": ["ops"]}))["memories"]
            assert [m["id"] for m in listed] == [memory["id"]]

            stale = {"id": memory["id"], "text": "Zorblax expires never.", "expect": memory["version"]}
            updated = _json(await client.call_tool("update_memory", {**stale, "text": UPDATED}))
            assert updated["text"] == UPDATED and updated["id"] == memory["id"]
            # The file name follows the new text (issue 38): renamed, the id kept, the old name gone.
            assert "after-5-minutes" in updated["path"] and updated["path"].endswith(f"-{memory['id']}.md")
            assert not (folder / memory["path"]).exists() and (folder / updated["path"]).is_file()
            memory["path"] = updated["path"]
            assert updated["version"] != memory["version"]
            # Updated from the version read before: refused in one line, the memory unchanged.
            text = _error_text(await client.call_tool("update_memory", stale))
            assert "changed since it was read" in text and "\n" not in text
            assert UPDATED in (folder / memory["path"]).read_text()
            hits = _json(await client.call_tool("search_memory", {"query": "zorblax cache expiry", "k": 3}))["hits"]
            assert hits[0]["path"] == memory["path"] and "5 minutes" in hits[0]["text"]
            assert "17 minutes" not in hits[0]["text"]
            old = {"query": "hourly", "mode": "keyword", "filters": {"root": "memories"}}
            assert _json(await client.call_tool("search_memory", old))["hits"] == []  # a word only the old text had
            assert all("17 minutes" not in hit["text"] for hit in hits)

            forgotten = _json(await client.call_tool("forget", {"id": memory["id"]}))
            assert forgotten["id"] == memory["id"] and not (folder / memory["path"]).exists()
            assert forgotten["forgotten"] and forgotten["forgotten"].endswith("Z")  # when, not null (issue 38)
            hits = _json(await client.call_tool("search_memory", {"query": "zorblax cache expiry", "k": 10}))["hits"]
            assert memory["path"] not in [hit["path"] for hit in hits]
            trashed = _json(await client.call_tool("list_memories", {"forgotten": True}))["memories"]
            assert [(m["id"], m["text"]) for m in trashed] == [(memory["id"], UPDATED)] and trashed[0]["forgotten"]
            restored = _json(await client.call_tool("restore_memory", {"id": memory["id"]}))
            assert (restored["id"], restored["path"], restored["indexed"]) == (memory["id"], memory["path"], True)
            hits = _json(await client.call_tool("search_memory", {"query": "zorblax cache expiry", "k": 3}))["hits"]
            assert hits[0]["path"] == memory["path"]
            versions = _json(await client.call_tool("memory_history", {"id": memory["id"]}))["versions"]
            assert [(v["n"], v["event"]) for v in versions] == [
                (1, "remember"),
                (2, "update"),
                (3, "forget"),
                (4, "restore"),
            ]
            assert versions[0]["text"] == memory["text"] and versions[0]["version"] == memory["version"]
            back = _json(await client.call_tool("restore_memory", {"id": memory["id"], "version": 1}))
            assert back["text"] == memory["text"] and memory["text"] in (folder / memory["path"]).read_text()
            text = _error_text(await client.call_tool("restore_memory", {"id": memory["id"], "version": 0}))
            assert "a version is a number" in text and "\n" not in text
            purged = _json(await client.call_tool("forget", {"id": memory["id"], "purge": True}))
            assert purged["id"] == memory["id"] and purged["forgotten"]
            assert _json(await client.call_tool("list_memories", {"forgotten": True}))["memories"] == []

            # Bad input: a one-line tool error, nothing written; unknown ids are refused.
            for tool, arguments, reason in [
                ("remember", {"text": "   "}, "text is empty"),
                ("remember", {"text": "x" * (64 * 1024 + 1)}, "text is longer than 65536 bytes"),
                ("remember", {"text": "ok", "tags": ["a\nb"]}, "tag must be one line"),
                ("remember", {"text": "ok", "metadata": {"a": {"b": 1}}}, "metadata a must be a string"),
                ("forget", {"id": memory["id"]}, f"no memory {memory['id']}"),
                ("update_memory", {"id": "../../notes/x.md", "text": "x"}, "an id is 12 hexadecimal digits"),
            ]:
                text = _error_text(await client.call_tool(tool, arguments))
                assert reason in text and "\n" not in text, (tool, text)
            assert sorted(folder.rglob("*.md")) == []

    asyncio.run(session())


def test_a_read_only_server_offers_no_write_tools(db_url, tmp_path):
    async def session():
        async with Client(_server({"PGRECALL_DATABASE_URL": db_url}, tmp_path, "--read-only")) as client:
            return {tool.name for tool in (await client.list_tools()).tools}

    assert asyncio.run(session()) == {"search_memory", "get_document", "recent_memories"}


def test_one_hit_has_one_json_and_one_k_limit_on_every_interface(index, db_url, searcher, tmp_path):
    """The same search through the CLI (--json), HTTP, MCP and Python: the same hit JSON; and k above
    MAX_K refused by each with the same message."""
    from fastapi.testclient import TestClient

    import pgrecall.api
    from pgrecall.api.http import create_app
    from pgrecall.errors import InvalidInput

    index(write_notes(tmp_path / "notes", ERROR_CODE_NOTES))
    env = {**os.environ, "PGRECALL_DATABASE_URL": db_url, "PGRECALL_HOME": str(tmp_path / "home")}
    refusal = f"k must be an integer from 1 to {contract.MAX_K}"

    def cli(*args: str) -> subprocess.CompletedProcess:
        return run_cli("search", *args, env=env, timeout=120)

    from_cli = json.loads(cli("E-4711", "-k", "2", "--json").stdout)
    too_many = cli("E-4711", "-k", str(contract.MAX_K + 1))
    assert too_many.returncode == 1 and too_many.stderr.strip() == f"pgrecall: error: {refusal}"

    http = TestClient(create_app(searcher))
    from_http = http.post("/search", json={"query": "E-4711", "k": 2}).json()["hits"]
    for response in (
        http.post("/search", json={"query": "E-4711", "k": contract.MAX_K + 1}),
        http.get("/search", params={"q": "E-4711", "k": contract.MAX_K + 1}),
    ):
        assert response.status_code == 422 and response.json() == {"error": refusal}

    async def session():
        async with Client(_server({"PGRECALL_DATABASE_URL": db_url}, tmp_path, "--read-only")) as client:
            hits = _json(await client.call_tool("search_memory", {"query": "E-4711", "k": 2}))["hits"]
            error = _error_text(await client.call_tool("search_memory", {"query": "E-4711", "k": contract.MAX_K + 1}))
            return hits, error

    from_mcp, mcp_error = asyncio.run(session())
    assert mcp_error == f"Error executing tool search_memory: {refusal}"  # the SDK's prefix, then ours

    with pytest.raises(InvalidInput, match=f"^{refusal}$"):
        pgrecall.api.search("E-4711", k=contract.MAX_K + 1)
    from_python = [hit.to_json() for hit in searcher.search("E-4711", k=2)]

    assert from_cli[0]["path"] == "incidents/e4711.md"
    assert list(from_cli[0]) == list(contract.HIT_FIELDS)
    assert from_cli == from_http == from_mcp == json.loads(json.dumps(from_python))


def test_invalid_utf8_and_wrong_types_are_refused_in_one_line_over_raw_stdio(db_url, tmp_path):
    """Bytes that are not UTF-8 are never stored as U+FFFD, and an argument of the wrong type gets
    one line (not the validator's four lines with a URL): a client speaking JSON-RPC itself."""
    env = {
        **os.environ,
        "PGRECALL_DATABASE_URL": db_url,
        "PGRECALL_HOME": str(tmp_path / "home"),
        "PGRECALL_LOG_FORMAT": "json",
        "PGRECALL_CONFIG": str(tmp_path / "no-config.toml"),
    }

    def call(number: int, name: str, arguments: dict) -> bytes:
        request = {"jsonrpc": "2.0", "id": number, "method": "tools/call", "params": {"name": name}}
        request["params"]["arguments"] = arguments
        return json.dumps(request).encode() + b"\n"

    initialize = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
    wire = (
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize}).encode()
        + b"\n"
        + json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode()
        + b"\n"
        + call(2, "remember", {"text": "Latin-1 bytes: caf@ and more."}).replace(b"caf@", b"caf\xe9")
        + call(3, "remember", {"text": "ok", "title": "caf@"}).replace(b"caf@", b"caf\xff\xfe")
        + call(4, "remember", {"text": 123})
        + call(5, "remember", {"text": "ok", "tags": "ops"})
        + call(6, "list_memories", {})
    )
    server = subprocess.Popen(
        [*COMMAND, "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
    )
    answers = {}
    try:
        server.stdin.write(wire)
        server.stdin.flush()  # kept open: the server ends at EOF, maybe before its last answers
        while len(answers) < 6:
            line = server.stdout.readline()
            assert line, f"the server closed its stdout after answering {sorted(answers)}"
            message = json.loads(line)
            if "id" in message:
                answers[message["id"]] = message["result"]
    finally:
        server.stdin.close()
        server.wait(60)
        server.stdout.close()
    errors = {number: answers[number]["content"][0]["text"] for number in (2, 3, 4, 5)}
    assert all(answers[number]["isError"] for number in errors), answers
    expected = {
        2: "text is not valid UTF-8 (or holds the noncharacter U+FDD0)",
        3: "title is not valid UTF-8 (or holds the noncharacter U+FDD0)",
        4: "text: Input should be a valid string",
        5: "tags: Input should be a valid list",
    }
    for number, reason in expected.items():  # the SDK may put "Error executing tool remember: " in front
        assert errors[number].endswith(reason) and "\n" not in errors[number], errors[number]
    listed = answers[6]["structuredContent"] or json.loads(answers[6]["content"][0]["text"])
    assert listed["memories"] == []
    assert not (tmp_path / "home" / "memories").exists() or list((tmp_path / "home" / "memories").rglob("*.md")) == []
