"""Project scope and time over HTTP and MCP (in process, the SDK's own client), on a real index."""

from __future__ import annotations

import asyncio
import json

import pytest
from fastapi.testclient import TestClient
from mcp.client.client import Client
from mcp_types import ListRootsResult, Root

from pgrecall.api.http import create_app
from pgrecall.api.mcp_server import create_server
from pgrecall.api.startup import Ready
from tests.integration.test_scope import PROJECT_NOTES, A, B
from tests.notes import write_notes


@pytest.fixture
def projects(index, tmp_path):
    index(write_notes(tmp_path / "notes", PROJECT_NOTES))


QUERY = "why did the export job fail after storage throttled reads"


def test_http_search_takes_the_project_searched_from_the_project_filter_and_times(projects, searcher):
    client = TestClient(create_app(searcher))
    paths = [h["path"] for h in client.post("/search", json={"query": QUERY, "k": 2, "project": A}).json()["hits"]]
    assert paths == ["a/e4712.md", "b/e4711.md"]
    paths = [h["path"] for h in client.post("/search", json={"query": QUERY, "k": 2, "project": B}).json()["hits"]]
    assert paths == ["b/e4711.md", "a/e4712.md"]
    got = client.get("/search", params={"q": QUERY, "k": 2, "prefer_project": A}).json()["hits"]
    assert [h["path"] for h in got] == ["a/e4712.md", "b/e4711.md"] and got[0]["project"] == A
    only_b = client.get("/search", params={"q": QUERY, "k": 10, "project": B}).json()["hits"]
    assert only_b and {h["project"] for h in only_b} == {B}
    # All indexed just now (floor off: the notes unrelated to the query count too).
    body = {"query": QUERY, "filters": {"since": "2w", "before": "2100-01-01"}, "floor": False}
    assert len(client.post("/search", json=body).json()["hits"]) == len(PROJECT_NOTES)
    none = client.post("/search", json={"query": QUERY, "filters": {"before": "yesterday"}}).json()["hits"]
    assert none == []
    refused = client.post("/search", json={"query": QUERY, "filters": {"since": "soon"}})
    assert refused.status_code == 422 and "filter since must be" in refused.json()["error"]
    recent = client.get("/recent", params={"project": A, "days": 1}).json()["documents"]
    assert {d["path"] for d in recent} == {"a/e4712.md", "a/deploy.md"}
    assert client.get("/recent", params={"days": 0}).status_code == 422


def test_http_remember_takes_a_project(searcher, memories, memory_folder):
    client = TestClient(create_app(searcher, memories=Ready(memories), memory_folder=memory_folder))
    created = client.post("/memories", json={"text": "Borealis ships on Fridays.", "project": B})
    assert created.status_code == 201, created.text
    assert created.json()["metadata"] == {"project": B}
    (listed,) = client.get("/recent", params={"project": B}).json()["documents"]
    assert listed["memory_id"] == created.json()["id"] and listed["occurred_at"].startswith(
        created.json()["created"][:19]
    )


def _roots(folder):
    async def list_roots(context):
        return ListRootsResult(roots=[Root(uri=f"file://{folder}", name="work")])

    return list_roots


def _body(result) -> dict:
    assert not result.is_error, result.content
    return result.structured_content or json.loads(result.content[0].text)


def test_mcp_search_and_remember_take_the_project_from_the_client_s_roots(
    projects, searcher, memories, memory_folder, tmp_path
):
    repo = tmp_path / "apollo"
    (repo / ".git").mkdir(parents=True)
    server = create_server(Ready(searcher), Ready(memories), memory_folder)

    async def session():
        # The initialize handshake, as Claude Code and Claude Desktop connect today: the server may
        # ask the client for its roots. (The 2026-07-28 protocol has no such request.)
        async with Client(server, mode="legacy", list_roots_callback=_roots(repo)) as client:
            saved = _body(await client.call_tool("remember", {"text": "Apollo's on-call rotates on Mondays."}))
            assert saved["metadata"]["project"] == str(repo.resolve())
            unscoped = _body(await client.call_tool("remember", {"text": "The user likes tea.", "project": ""}))
            assert "project" not in unscoped["metadata"]
            found = _body(await client.call_tool("search_memory", {"query": "on-call rotation", "k": 1}))
            assert found["hits"][0]["project"] == str(repo.resolve())
            # An explicit project is the boost context; the roots are not asked.
            ranked = _body(await client.call_tool("search_memory", {"query": QUERY, "k": 2, "project": B}))
            assert [h["path"] for h in ranked["hits"]] == ["b/e4711.md", "a/e4712.md"]
            ranked = _body(await client.call_tool("search_memory", {"query": QUERY, "k": 2, "project": A}))
            assert [h["path"] for h in ranked["hits"]] == ["a/e4712.md", "b/e4711.md"]
            timed = _body(await client.call_tool("search_memory", {"query": QUERY, "before": "yesterday"}))
            assert timed["hits"] == []
            bad = await client.call_tool("search_memory", {"query": QUERY, "since": "soon"})
            assert bad.is_error and "since must be" in bad.content[0].text
            recent = _body(await client.call_tool("recent_memories", {"project": str(repo), "days": 1}))
            assert [d["memory_id"] for d in recent["documents"]] == [saved["id"]]

        # Clients that give no roots: one without the capability, one on the newer protocol.
        for mode, text in (("legacy", "Deploy freezes start on the 20th."), ("auto", "Builds run on the ARM runners.")):
            async with Client(server, mode=mode) as plain:
                saved = _body(await plain.call_tool("remember", {"text": text}))
                assert "project" not in saved["metadata"]
                assert _body(await plain.call_tool("search_memory", {"query": text, "k": 1}))["hits"]

    asyncio.run(session())
