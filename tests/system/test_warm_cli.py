"""The warm path end to end: a real `pgrecall serve`, and `pgrecall search` and `pgrecall mcp` asking its socket."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters

from tests.notes import ERROR_CODE_NOTES, write_notes
from tests.service import Process, in_sync, service_env, wait_for
from tests.support.cli import COMMAND, run_cli

pytestmark = pytest.mark.slow

HEAVY = ("numpy", "torch", "onnxruntime", "sentence_transformers", "transformers", "psycopg", "structlog")
# `pgrecall search` in a fresh interpreter, then the heavy packages it imported, on stderr.
SEARCH_AND_LIST_IMPORTS = (
    "import sys\n"
    "from pgrecall.cli import main\n"
    "code = main(sys.argv[1:])\n"
    f"print(sorted({{m.partition('.')[0] for m in sys.modules}} & set({HEAVY!r})), file=sys.stderr)\n"
    "sys.exit(code)\n"
)


def children_running(word: str) -> list[int]:
    """This process's children whose command line holds `word`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parent = int((entry / "stat").read_text().rpartition(")")[2].split()[1])
            words = (entry / "cmdline").read_bytes().split(b"\0")
        except (OSError, ValueError, IndexError):
            continue
        if parent == os.getpid() and word.encode() in words:
            found.append(int(entry.name))
    return found


def mapped(pid: int, library: str) -> bool:
    return library in Path(f"/proc/{pid}/maps").read_text()


def search_json(env: dict[str, str], *args: str) -> list[dict]:
    done = run_cli("search", *args, "--json", env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_searches_and_mcp_ask_the_running_serve(db_url, tmp_path):
    notes = write_notes(tmp_path / "notes", ERROR_CODE_NOTES)
    home = tmp_path / "home"
    env = service_env(db_url, home)
    socket_path = home / "search.sock"
    service = Process(["serve", str(notes)], env, tmp_path / "serve.log")
    try:
        wait_for(lambda: in_sync(db_url, notes), 180, message="the initial index")
        wait_for(socket_path.exists, 180, message="the warm socket")
        assert stat.S_IMODE(socket_path.stat().st_mode) == 0o600
        assert service.events("warm_socket_listening")[0]["path"] == str(socket_path)

        # The same answers through the socket as in-process, printed and as JSON. A model that cannot
        # load here shows which process answered: the client's own would fail.
        no_model = {**env, "PGRECALL_MODEL": str(tmp_path / "no-model")}
        in_process = {**env, "PGRECALL_WARM_SOCKET": "off"}
        for args in (
            ["E-4711", "-k", "3"],
            ["why did the export fail", "--fusion", "rrf"],
            ["tomatoes", "--mode", "vector"],
        ):
            assert search_json(no_model, *args) == search_json(in_process, *args)
        printed = run_cli("search", "export job failed", "-k", "2", env=no_model)
        assert printed.returncode == 0, printed.stderr
        assert printed.stdout == run_cli("search", "export job failed", "-k", "2", env=in_process).stdout
        assert (
            run_cli("search", "E-4711", env={**in_process, "PGRECALL_MODEL": str(tmp_path / "no-model")}).returncode
            == 1
        )
        invalid = run_cli("search", "E-4711", "-k", "0", env=no_model)
        assert invalid.returncode == 1 and invalid.stderr.count("\n") == 1

        # Through the socket the CLI imports neither the model, numpy, psycopg nor structlog.
        lean = subprocess.run(
            [sys.executable, "-c", SEARCH_AND_LIST_IMPORTS, "search", "E-4711", "--json"],
            env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert lean.returncode == 0, lean.stderr
        assert json.loads(lean.stdout)[0]["path"] == "incidents/e4711.md"
        assert lean.stderr.strip().splitlines()[-1] == "[]"

        # The prompt hook asks the socket too: it injects the passage without a model of its own.
        payload = json.loads((Path(__file__).parents[1] / "fixtures" / "hooks" / "user_prompt_submit.json").read_text())
        stdin = json.dumps({**payload, "prompt": "what happened with E-4711 in the export job?"})
        for hook_env, answered in ((no_model, True), ({**no_model, "PGRECALL_WARM_SOCKET": "off"}, False)):
            hook = subprocess.run(
                [*COMMAND, "hook", "prompt"], env={**hook_env, "PGRECALL_HOOK_DEADLINE": "60"}, input=stdin,
                capture_output=True, text=True, timeout=120,
            )  # fmt: skip
            assert hook.returncode == 0
            assert ("incidents/e4711.md" in hook.stdout) is answered, (hook.stdout, hook.stderr)

        expected = search_json(in_process, "E-4711", "-k", "2")
        assert asyncio.run(mcp_session(env, expected)) == "no model loaded"

        assert service.stop() == 0
        assert not socket_path.exists()
        assert search_json(env, "E-4711", "-k", "2") == expected  # in-process once serve is gone
    finally:
        if service.popen.poll() is None:
            service.kill()


async def mcp_session(env: dict[str, str], expected: list[dict]) -> str:
    params = StdioServerParameters(command=COMMAND[0], args=[*COMMAND[1:], "mcp"], env=env)
    async with Client(params) as client:
        result = await client.call_tool("search_memory", {"query": "E-4711", "k": 2})
        assert not result.is_error, result.content
        assert (result.structured_content or json.loads(result.content[0].text))["hits"] == expected
        document = await client.call_tool("get_document", {"id_or_path": "incidents/e4711.md"})
        body = document.structured_content or json.loads(document.content[0].text)
        assert body["document_id"] == expected[0]["document_id"] and "E-4711" in body["text"]
        missing = await client.call_tool("get_document", {"id_or_path": "no/such.md"})
        assert missing.is_error
        (pid,) = children_running("mcp")
        assert not mapped(pid, "onnxruntime") and not mapped(pid, "libtorch")
        rss_kb = int(
            next(
                line for line in Path(f"/proc/{pid}/status").read_text().splitlines() if line.startswith("VmRSS")
            ).split()[1]
        )
        print(f"pgrecall mcp beside serve, after a search: {rss_kb / 1024:.0f} MB resident")
        return "no model loaded"


def test_serve_replaces_a_stale_socket_and_honours_off(db_url, tmp_path):
    import socket

    home = tmp_path / "home"
    home.mkdir()
    notes = tmp_path / "notes"
    notes.mkdir()
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(home / "search.sock"))  # a serve killed without removing its file
    stale.close()
    off = Process(["serve", str(notes)], service_env(db_url, home, PGRECALL_WARM_SOCKET="off"), tmp_path / "off.log")
    try:
        wait_for(lambda: off.events("service_ready"), 180, message="serve with the socket off")
        assert off.events("warm_socket_off") and not off.events("warm_socket_listening")
        assert off.stop() == 0
    finally:
        if off.popen.poll() is None:
            off.kill()
    before = (home / "search.sock").stat().st_ino
    service = Process(["serve", str(notes)], service_env(db_url, home), tmp_path / "serve.log")
    try:
        wait_for(lambda: service.events("warm_socket_listening"), 180, message="the warm socket")
        assert (home / "search.sock").stat().st_ino != before
        assert search_json(service_env(db_url, home, PGRECALL_MODEL=str(tmp_path / "no-model")), "E-4711") == []
        assert service.stop(signal.SIGINT) == 0
        assert not (home / "search.sock").exists()
    finally:
        if service.popen.poll() is None:
            service.kill()
