"""`pgrecall api --read-only` and `pgrecall mcp --read-only`, run for real, never import a module that writes.

Each server is the real command in a process of its own, asked a search, a
memory listing and (the API) a write it refuses; then it writes the names of
every module it has imported (sys.modules) to a file, and none may be of the
write path: the worker, the Python memory writes, the migrator, the queue.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import psycopg
import pytest
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters
from psycopg import sql

from tests.service import wait_for

# The real command line, which writes sys.modules to DUMP once TRIGGER exists.
SERVER = """
import json, sys, threading, time
from pathlib import Path

from pgrecall.cli import main

trigger, dump = Path(sys.argv[1]), Path(sys.argv[2])


def dump_modules_when_asked():
    while not trigger.exists():
        time.sleep(0.05)
    partial = dump.with_suffix(".partial")
    partial.write_text(json.dumps(sorted(sys.modules)))
    partial.rename(dump)


threading.Thread(target=dump_modules_when_asked, daemon=True).start()
sys.exit(main(sys.argv[3:]))
"""

WRITE_PATH = [
    "pgrecall.worker",
    "pgrecall.composition.memories",
    "procrastinate",
    "pgrecall.postgres.migrator",
    "pgrecall.postgres.reader_login",
]


def _loaded(modules: list[str], prefix: str) -> list[str]:
    return [name for name in modules if name == prefix or name.startswith(prefix + ".")]


@pytest.fixture(scope="module")
def database_url(server_url, template_url):
    """A migrated database for this module's servers (they only read it)."""
    name = f"pgrecall_imports_{uuid.uuid4().hex[:8]}"
    template = psycopg.conninfo.conninfo_to_dict(template_url)["dbname"]
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(sql.Identifier(name), sql.Identifier(template)))
    yield psycopg.conninfo.make_conninfo(server_url, dbname=name)
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def _environment(database_url: str, home: Path) -> dict[str, str]:
    env = dict(
        os.environ,
        PGRECALL_DATABASE_URL=database_url,
        PGRECALL_HOME=str(home),
        PGRECALL_LOG_FORMAT="json",
        PGRECALL_CONFIG=str(home / "no-config.toml"),
    )
    env.pop("PGRECALL_API_TOKEN", None)
    return env


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _request(url: str, body: dict | None = None) -> tuple[int, dict] | None:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())
    except OSError:
        return None  # not listening yet


def _dumped(folder: Path) -> list[str]:
    (folder / "trigger").touch()
    dump = folder / "modules.json"
    wait_for(dump.exists, 60, message="the server's sys.modules")
    return json.loads(dump.read_text())


def run_api(database_url: str, folder: Path, *flags: str) -> tuple[dict[str, int], list[str]]:
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(folder / "trigger"), str(folder / "modules.json")]
        + ["api", "--port", str(port), *flags],
        env=_environment(database_url, folder / "home"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        health = wait_for(lambda: _request(f"{base}/health"), 120, message="api up")
        answers = {
            "health": health[0],
            "search": _request(f"{base}/search?q=E-4711&k=3")[0],
            "list": _request(f"{base}/memories")[0],
            "remember": _request(f"{base}/memories", {"text": "Written through the API."})[0],
        }
        return answers, _dumped(folder)
    finally:
        server.terminate()
        server.wait(60)


def run_mcp(database_url: str, folder: Path, *flags: str) -> tuple[set[str], list[str]]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-c", SERVER, str(folder / "trigger"), str(folder / "modules.json"), "mcp", *flags],
        env=_environment(database_url, folder / "home"),
    )

    async def session() -> tuple[set[str], list[str]]:
        async with Client(params) as client:
            tools = {tool.name for tool in (await client.list_tools()).tools}
            result = await client.call_tool("search_memory", {"query": "E-4711", "k": 3})
            assert not result.is_error, result.content[0].text
            return tools, await asyncio.to_thread(_dumped, folder)

    return asyncio.run(session())


@pytest.fixture(scope="module")
def read_only_api(database_url, tmp_path_factory):
    answers, modules = run_api(database_url, tmp_path_factory.mktemp("api"), "--read-only")
    assert answers == {"health": 200, "search": 200, "list": 200, "remember": 403}
    return modules


@pytest.fixture(scope="module")
def read_only_mcp(database_url, tmp_path_factory):
    tools, modules = run_mcp(database_url, tmp_path_factory.mktemp("mcp"), "--read-only")
    assert tools == {"search_memory", "get_document", "recent_memories"}
    return modules


@pytest.mark.parametrize("prefix", WRITE_PATH)
def test_a_read_only_api_imports_nothing_that_writes(read_only_api, prefix):
    assert "pgrecall.api.http" in read_only_api and "uvicorn" in read_only_api  # the real server ran
    assert _loaded(read_only_api, prefix) == []


@pytest.mark.parametrize("prefix", WRITE_PATH)
def test_a_read_only_mcp_server_imports_nothing_that_writes(read_only_mcp, prefix):
    assert "pgrecall.api.mcp_server" in read_only_mcp and "pgrecall.api.searcher" in read_only_mcp
    assert _loaded(read_only_mcp, prefix) == []


def test_an_api_that_writes_does_import_the_write_path(database_url, tmp_path):
    """The check above sees the write path when it is there: a write loads the worker and the memory client."""
    answers, modules = run_api(database_url, tmp_path)
    assert answers["remember"] == 201
    assert "pgrecall.worker.memory.writer" in modules and "pgrecall.composition.memories" in modules
