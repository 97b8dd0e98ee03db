"""remember's door as a user and an assistant meet it: the CLI (exit 3 for a near-duplicate, 4 for
a secret, --force, --allow-secret, --json) and the MCP tool (a result in words, a tool error)."""

from __future__ import annotations

import asyncio
import json
import os

from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters

from tests.support.cli import COMMAND, cli_env, run_cli
from tests.support.secrets import SHAPES

FACT = "Staging runs three replicas since the March outage."
PARAPHRASE = "Since the March outage, staging has been running 3 replicas."
UNRELATED = "Grandma's lentil soup uses cumin and lemon."
TOKEN = dict(SHAPES)["github token"](11)


def notes(folder) -> list:
    return sorted(folder.rglob("*.md")) if folder.exists() else []


def test_remember_on_the_command_line_exits_3_for_a_near_duplicate_and_4_for_a_secret(db_url, tmp_path):
    env = cli_env(db_url, tmp_path / "home", PGRECALL_CONFIG=str(tmp_path / "no-config.toml"))
    folder = tmp_path / "home" / "memories"
    first = run_cli("remember", FACT, "--json", env=env)
    assert first.returncode == 0, first.stderr
    memory_id = json.loads(first.stdout)["id"]

    refused = run_cli("remember", PARAPHRASE, env=env)
    assert refused.returncode == 3, refused.stderr
    line = refused.stderr.strip().splitlines()[-1]
    assert memory_id in line and f"pgrecall update {memory_id}" in line and "--force" in line
    assert line.count(memory_id) == 2  # named once, then in the advice
    as_json = run_cli("remember", PARAPHRASE, "--json", env=env)
    assert as_json.returncode == 3
    answer = json.loads(as_json.stdout)
    assert [m["id"] for m in answer["near_duplicates"]] == [memory_id]
    assert f"pgrecall update {memory_id}" in answer["error"] and "--force" in answer["error"]
    assert "update_memory" not in answer["error"] and "force=" not in answer["error"]
    assert len(notes(folder)) == 1

    five = run_cli("remember", "Production runs five replicas since the March outage.", "--json", env=env)
    assert five.returncode == 0, five.stderr
    assert [m["id"] for m in json.loads(five.stdout)["similar"]] == [memory_id]
    assert f"resembles {memory_id}" in five.stderr and f"pgrecall update {memory_id}" in five.stderr
    assert len(notes(folder)) == 2

    forced = run_cli("remember", PARAPHRASE, "--force", "--json", env=env)
    assert forced.returncode == 0, forced.stderr
    assert json.loads(forced.stdout)["new"] and len(notes(folder)) == 3

    text = f"The deploy bot uses {TOKEN} until May."
    secret = run_cli("remember", text, env=env)
    assert secret.returncode == 4
    assert "github token" in secret.stderr and "line 1, column 21" in secret.stderr
    assert TOKEN not in secret.stdout + secret.stderr and len(notes(folder)) == 3
    secret_json = run_cli("remember", text, "--json", env=env)
    assert secret_json.returncode == 4 and json.loads(secret_json.stdout)["secret"] == "github token"
    allowed = run_cli("remember", text, "--allow-secret", env=env)
    assert allowed.returncode == 0, allowed.stderr
    assert TOKEN not in allowed.stdout + allowed.stderr and len(notes(folder)) == 4

    updated = run_cli("update", memory_id, "--text", text, env=env)
    assert updated.returncode == 4 and "github token" in updated.stderr and TOKEN not in updated.stderr
    assert TOKEN not in "".join(path.read_text() for path in notes(folder) if memory_id in path.name)


def _server(db_url: str, tmp_path) -> StdioServerParameters:
    return StdioServerParameters(
        command=COMMAND[0],
        args=[*COMMAND[1:], "mcp"],
        env={
            **os.environ,
            "PGRECALL_DATABASE_URL": db_url,
            "PGRECALL_HOME": str(tmp_path / "home"),
            "PGRECALL_LOG_FORMAT": "json",
            "PGRECALL_CONFIG": str(tmp_path / "no-config.toml"),
        },
    )


def _result(result) -> dict:
    assert not result.is_error, result.content[0].text
    return result.structured_content or json.loads(result.content[0].text)


def test_the_mcp_remember_tool_says_what_to_do_with_a_near_duplicate_and_refuses_a_secret(db_url, tmp_path):
    folder = tmp_path / "home" / "memories"

    async def session():
        async with Client(_server(db_url, tmp_path)) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert {"force", "allow_secret"} <= set(tools["remember"].input_schema["properties"])
            first = _result(await client.call_tool("remember", {"text": FACT, "project": ""}))
            assert first["saved"] and first["new"]

            refused = _result(await client.call_tool("remember", {"text": PARAPHRASE, "project": ""}))
            assert refused["saved"] is False and [m["id"] for m in refused["near_duplicates"]] == [first["id"]]
            assert refused["near_duplicates"][0]["text"] == FACT
            message = refused["message"]
            assert f"update_memory(id={first['id']!r}" in message and "force=true" in message
            assert message.count(first["id"]) == 2
            assert len(notes(folder)) == 1
            again = _result(await client.call_tool("remember", {"text": FACT, "project": ""}))
            assert (again["saved"], again["new"], again["id"]) == (True, False, first["id"])
            unrelated = _result(await client.call_tool("remember", {"text": UNRELATED, "project": ""}))
            assert unrelated["saved"] and unrelated["new"]
            forced = _result(await client.call_tool("remember", {"text": PARAPHRASE, "project": "", "force": True}))
            assert forced["saved"] and forced["new"] and len(notes(folder)) == 3
            five = {"text": "Production runs five replicas since the March outage.", "project": ""}
            other = _result(await client.call_tool("remember", five))  # another fact: saved, naming its neighbour
            assert other["saved"] and other["new"] and first["id"] in [m["id"] for m in other["similar"]]
            assert f"resembles {first['id']}" in other["message"] and "update_memory(id=" in other["message"]

            text = f"The deploy bot uses {TOKEN} until May."
            secret = await client.call_tool("remember", {"text": text, "project": ""})
            assert secret.is_error
            reason = secret.content[0].text
            assert "github token" in reason and "allow_secret=true" in reason and TOKEN not in reason
            allowed = await client.call_tool("remember", {"text": text, "project": "", "allow_secret": True})
            assert _result(allowed)["saved"] and len(notes(folder)) == 5
            update = await client.call_tool("update_memory", {"id": first["id"], "text": text})
            assert update.is_error and "github token" in update.content[0].text and TOKEN not in update.content[0].text

    asyncio.run(session())
