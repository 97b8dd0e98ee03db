"""Every tool `pgrecall mcp` lists, called through the MCP SDK's stdio client, with and without `serve`.

TOOLS maps each tool to the driver that calls it and checks a real answer; the test asks the server
for its tools and fails on one without a driver, on a driver whose tool is gone, and on a driver that
did not get an answer from its own tool (a name alone in TOOLS satisfies nothing). recent_memories
once failed on every call of `pgrecall mcp` (issue 38, item 3): no test called it through the CLI.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters

from tests.notes import ERROR_CODE_NOTES, write_notes
from tests.service import Process, in_sync, service_env, wait_for
from tests.support.cli import COMMAND

FACT = "The quokka deploy window opens on Tuesdays because Friday deploys broke on-call twice."
CORRECTED = "The quokka deploy window opens on Wednesdays since the on-call rota moved."


class Recorder:
    """The SDK client, remembering each tool that answered without an error."""

    def __init__(self, client: Client):
        self.client = client
        self.answered: set[str] = set()
        self.memory_id = ""

    async def call(self, tool: str, **arguments: Any) -> dict[str, Any]:
        result = await self.client.call_tool(tool, arguments)
        assert not result.is_error, f"{tool}: {result.content[0].text}"
        self.answered.add(tool)
        return result.structured_content or json.loads(result.content[0].text)


async def search_memory(mcp: Recorder) -> None:
    hits = (await mcp.call("search_memory", query="E-4711", k=2))["hits"]
    assert hits[0]["path"] == "incidents/e4711.md" and "E-4711" in hits[0]["text"]


async def get_document(mcp: Recorder) -> None:
    document = await mcp.call("get_document", id_or_path="incidents/e4711.md")
    assert document["path"] == "incidents/e4711.md" and "E-4711" in document["text"]


async def recent_memories(mcp: Recorder) -> None:
    documents = (await mcp.call("recent_memories", days=30, limit=50))["documents"]
    assert set(ERROR_CODE_NOTES) <= {document["path"] for document in documents}
    only = (await mcp.call("recent_memories", kind="text"))["documents"]
    assert [document["path"] for document in only] == ["notes/postgres.txt"]


async def remember(mcp: Recorder) -> None:
    saved = await mcp.call("remember", text=FACT, tags=["ops"])
    assert saved["saved"] and saved["new"] and saved["indexed"] and saved["text"] == FACT
    mcp.memory_id = saved["id"]


async def update_memory(mcp: Recorder) -> None:
    updated = await mcp.call("update_memory", id=mcp.memory_id, text=CORRECTED)
    assert (updated["id"], updated["text"]) == (mcp.memory_id, CORRECTED)


async def list_memories(mcp: Recorder) -> None:
    listed = (await mcp.call("list_memories", tags=["ops"]))["memories"]
    assert [(memory["id"], memory["text"]) for memory in listed] == [(mcp.memory_id, CORRECTED)]


async def forget(mcp: Recorder) -> None:
    forgotten = await mcp.call("forget", id=mcp.memory_id)
    assert forgotten["id"] == mcp.memory_id
    assert (await mcp.call("list_memories", tags=["ops"]))["memories"] == []


async def restore_memory(mcp: Recorder) -> None:
    restored = await mcp.call("restore_memory", id=mcp.memory_id)
    assert (restored["id"], restored["text"], restored["indexed"]) == (mcp.memory_id, CORRECTED, True)
    hits = (await mcp.call("search_memory", query="quokka deploy window", filters={"root": "memories"}))["hits"]
    assert hits and "Wednesdays" in hits[0]["text"]


async def memory_history(mcp: Recorder) -> None:
    versions = (await mcp.call("memory_history", id=mcp.memory_id))["versions"]
    assert [version["event"] for version in versions] == ["remember", "update", "forget", "restore"]
    assert versions[0]["text"] == FACT


# In the order they run: the memory tools act on the memory remember saved.
TOOLS: dict[str, Callable[[Recorder], Awaitable[None]]] = {
    "search_memory": search_memory,
    "get_document": get_document,
    "recent_memories": recent_memories,
    "remember": remember,
    "update_memory": update_memory,
    "list_memories": list_memories,
    "forget": forget,
    "restore_memory": restore_memory,
    "memory_history": memory_history,
}


READ_TOOLS = ("search_memory", "get_document", "recent_memories")  # all that `mcp --read-only` lists


async def drive_every_tool(env: dict[str, str], *args: str) -> dict[str, Any]:
    """Each tool the server lists, called by its driver; how many were listed and answered."""
    params = StdioServerParameters(command=COMMAND[0], args=[*COMMAND[1:], "mcp", *args], env=env)
    async with Client(params) as client:
        listed = {tool.name for tool in (await client.list_tools()).tools}
        assert listed - set(TOOLS) == set(), "a tool without a driver in TOOLS"
        expected = set(READ_TOOLS) if "--read-only" in args else set(TOOLS)
        assert expected - listed == set(), "a driver in TOOLS whose tool the server no longer lists"
        mcp = Recorder(client)
        for name in sorted(listed, key=list(TOOLS).index):
            await TOOLS[name](mcp)
            assert name in mcp.answered, f"the driver of {name} never got an answer from it"
        return {"listed": len(listed), "answered": len(mcp.answered)}


@pytest.fixture
def notes(tmp_path):
    return write_notes(tmp_path / "notes", ERROR_CODE_NOTES)


def test_every_tool_answers_through_the_sdk_client(index, notes, db_url, tmp_path):
    index(notes)
    counts = asyncio.run(asyncio.wait_for(drive_every_tool(service_env(db_url, tmp_path / "home")), 240))
    assert counts == {"listed": len(TOOLS), "answered": len(TOOLS)}


@pytest.mark.slow
def test_every_tool_answers_beside_a_running_serve(notes, db_url, tmp_path):
    """The index tools answer through serve's warm socket: a read-only session whose own model cannot
    load gets their answers all the same; then every tool, the memory ones writing in-process."""
    home = tmp_path / "home"
    service = Process(["serve", str(notes)], service_env(db_url, home), tmp_path / "serve.log")
    try:
        wait_for(lambda: in_sync(db_url, notes), 180, message="the initial index")
        wait_for((home / "search.sock").exists, 180, message="the warm socket")
        no_model = service_env(db_url, home, PGRECALL_MODEL=str(tmp_path / "no-model"))
        counts = asyncio.run(asyncio.wait_for(drive_every_tool(no_model, "--read-only"), 240))
        assert counts == {"listed": len(READ_TOOLS), "answered": len(READ_TOOLS)}
        counts = asyncio.run(asyncio.wait_for(drive_every_tool(service_env(db_url, home)), 240))
        assert counts == {"listed": len(TOOLS), "answered": len(TOOLS)}
        assert service.stop() == 0
    finally:
        if service.popen.poll() is None:
            service.kill()
