"""Hits people and assistants can use (issue 39), through the real clients: `pgrecall search` as a
process and the MCP SDK's client over stdio (the engine, HTTP and the page:
tests/integration/test_passages.py)."""

import asyncio
import json
import os

from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters

from tests.integration.test_passages import DATABASE_NOTES, SIMPLE_NOTES
from tests.notes import write_notes
from tests.support.cli import COMMAND, run_cli

VACUUM_QUERY = "autovacuum scale factor dead tuples bloat freeze age"


def _search(cli_env, *args: str) -> list[dict]:
    result = run_cli("search", *args, "--json", env=cli_env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_search_hides_unvouched_hits_joins_passages_and_shows_similarity(index, cli_env, tmp_path):
    index(write_notes(tmp_path / "notes", {**DATABASE_NOTES, **SIMPLE_NOTES}))
    assert _search(cli_env, "garlic", "-k", "5") == []
    assert len(_search(cli_env, "garlic", "-k", "5", "--all")) == 5
    words = run_cli("search", "garlic", env=cli_env)
    assert words.returncode == 0 and words.stdout.strip() == "no results"

    joined = _search(cli_env, VACUUM_QUERY, "-k", "6", "--all")
    apart = _search(cli_env, VACUUM_QUERY, "-k", "6", "--all", "--no-merge")
    assert max(len(hit["chunk_ids"]) for hit in joined) >= 3 and len(joined) == 6
    assert all(hit["chunk_ids"] == [hit["chunk_id"]] for hit in apart)

    # The text shows the cosine similarity and the arms, comparable across queries; not the fused score.
    printed = run_cli("search", VACUUM_QUERY, "-k", "3", env=cli_env)
    assert printed.returncode == 0, printed.stderr
    first = printed.stdout.splitlines()[0]
    assert first.startswith("1. vacuum.md  [similarity 0.") and "keyword #1" in first and "chunks]" in first
    top = joined[0]
    assert f"similarity {top['similarity']:.2f}" in first and f"{top['score']:.4f}" not in first


def test_search_memory_takes_merge_and_floor(index, db_url, tmp_path):
    index(write_notes(tmp_path / "notes", {**DATABASE_NOTES, **SIMPLE_NOTES}))
    params = StdioServerParameters(
        command=COMMAND[0],
        args=[*COMMAND[1:], "mcp"],
        env={**os.environ, "PGRECALL_DATABASE_URL": db_url, "PGRECALL_HOME": str(tmp_path / "home")},
    )

    async def hits_of(client: Client, arguments: dict) -> list[dict]:
        result = await client.call_tool("search_memory", {"project": "", **arguments})
        assert not result.is_error, result.content
        return (result.structured_content or json.loads(result.content[0].text))["hits"]

    async def session():
        async with Client(params) as client:
            assert await hits_of(client, {"query": "garlic", "k": 5}) == []
            assert len(await hits_of(client, {"query": "garlic", "k": 5, "floor": False})) == 5
            joined = await hits_of(client, {"query": VACUUM_QUERY, "k": 6, "floor": False})
            apart = await hits_of(client, {"query": VACUUM_QUERY, "k": 6, "floor": False, "merge": False})
            assert max(len(hit["chunk_ids"]) for hit in joined) >= 3
            assert all(len(hit["chunk_ids"]) == 1 for hit in apart)

    asyncio.run(session())
