"""The MCP server end to end, through the SDK's own client over stdio."""

import asyncio
import json
import os
import sys
import time

from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters

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
