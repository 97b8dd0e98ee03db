"""Every command of the pgrecall CLI as a user runs it (a process): each with --help, and each once for real.

COMMANDS maps each command (nested ones included: `memories export`, `sources add`) to the driver
that runs it and checks a real result. The tests list the argparse subcommands and fail on one
without a driver, on a driver whose command is gone, and on a driver that did not run its own
command to a clean end (exit 0; a long-lived one stopped by SIGTERM): a name alone satisfies nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters

from pgrecall.cli import build_parser
from tests.notes import ERROR_CODE_NOTES, write_notes
from tests.service import Process, query, queue_idle, service_env, wait_for
from tests.support.cli import COMMAND, run_cli
from tests.support.evaluation import write_dataset

FACT = "The quokka deploy window opens on Tuesdays because Friday deploys broke on-call twice."
CORRECTED = "The quokka deploy window opens on Wednesdays since the on-call rota moved."
PROJECT = "/work/quokka"


def listed_commands() -> dict[tuple[str, ...], bool]:
    """Every command and subcommand of the parser, with whether it only groups required subcommands."""
    found: dict[tuple[str, ...], bool] = {}

    def walk(parser: argparse.ArgumentParser, path: tuple[str, ...]) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                if path:
                    found[path] = bool(action.required)
                for name, sub in action.choices.items():
                    found.setdefault((*path, name), False)
                    walk(sub, (*path, name))

    walk(build_parser(), ())
    return found


LISTED = listed_commands()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Cli:
    """Runs pgrecall as a process, remembering each command that ran to a clean end."""

    def __init__(self, env: dict[str, str], tmp_path: Path, db_url: str):
        self.env = env
        self.tmp_path = tmp_path
        self.db_url = db_url
        self.notes = tmp_path / "notes"
        self.ran: set[tuple[str, ...]] = set()
        self.memory_id = ""

    def command_of(self, args: tuple[str, ...]) -> tuple[str, ...]:
        words: tuple[str, ...] = ()
        for arg in args:
            if (*words, arg) not in LISTED:
                break
            words = (*words, arg)
        return words

    def clean_end(self, args: tuple[str, ...]) -> None:
        path = self.command_of(args)
        self.ran.add(path)
        if len(path) > 1 and LISTED[path[:-1]]:  # a group only runs through its subcommands
            self.ran.add(path[:-1])

    def run(self, *args: str, input: str | None = None, **extra: str) -> subprocess.CompletedProcess[str]:
        done = run_cli(*args, env={**self.env, **extra}, input=input, timeout=300)
        assert done.returncode == 0, (args, done.stderr[-2000:])
        self.clean_end(args)
        return done

    def json(self, *args: str, **extra: str):
        return json.loads(self.run(*args, "--json", **extra).stdout)

    def start(self, *args: str) -> Process:
        return Process(list(args), self.env, self.tmp_path / f"{args[0]}.log")

    def stop(self, process: Process, args: tuple[str, ...]) -> None:
        code = process.stop(signal.SIGTERM)
        assert code == 0, (args, process.log_path.read_text(errors="replace")[-2000:])
        self.clean_end(args)


def index(cli: Cli) -> None:
    summary = cli.json("index", str(cli.notes))
    assert (summary["indexed"], summary["skipped"]) == (len(ERROR_CODE_NOTES), 1)


def search(cli: Cli) -> None:
    hits = cli.json("search", "E-4711", "-k", "2")
    assert hits[0]["path"] == "incidents/e4711.md"


def recent(cli: Cli) -> None:
    documents = cli.json("recent", "--days", "30", "--limit", "50")
    assert set(ERROR_CODE_NOTES) <= {document["path"] for document in documents}


def status(cli: Cli) -> None:
    state = cli.json("status")
    assert (state["documents"], state["skipped"]) == (len(ERROR_CODE_NOTES), 1)


def failures(cli: Cli) -> None:
    assert "junk.bin" in json.dumps(cli.json("failures"))


def models(cli: Cli) -> None:
    assert "sha256:" in json.dumps(cli.json("models"))


def models_add(cli: Cli) -> None:
    """Under torch, so that the driver converts the weights but builds no ONNX file: the conversion
    is what the command adds (tests/system/test_e5_model_cli.py drives it with every check)."""
    cache = cli.tmp_path / "model-cache"
    done = cli.run(
        "models", "add", "multilingual-e5-small", PGRECALL_MODEL_CACHE=str(cache), PGRECALL_EMBED_BACKEND="torch"
    )
    assert done.stdout.startswith("multilingual-e5-small added:"), done.stdout
    assert (cache / "added" / "multilingual-e5-small" / "tokenizer.json").is_file()


def reembed(cli: Cli) -> None:
    cli.json("reembed")
    assert cli.json("search", "tomatoes", "-k", "1", "--mode", "vector")[0]["path"] == "notes/garden.md"


def remember(cli: Cli) -> None:
    saved = cli.json("remember", FACT, "--tag", "ops", "--project", PROJECT)
    assert saved["text"] == FACT and saved["indexed"]
    cli.memory_id = saved["id"]


def update(cli: Cli) -> None:
    updated = cli.json("update", cli.memory_id, "--text", CORRECTED)
    assert (updated["id"], updated["text"]) == (cli.memory_id, CORRECTED)


def memories(cli: Cli) -> None:
    listed = cli.json("memories", "--tag", "ops")
    assert [(memory["id"], memory["text"]) for memory in listed] == [(cli.memory_id, CORRECTED)]


def forget(cli: Cli) -> None:
    assert cli.json("forget", cli.memory_id)["id"] == cli.memory_id
    assert cli.json("memories", "--tag", "ops") == []


def restore(cli: Cli) -> None:
    restored = cli.json("restore", cli.memory_id)
    assert (restored["id"], restored["text"]) == (cli.memory_id, CORRECTED)


def memory_history(cli: Cli) -> None:
    history = cli.json("memories", "history", cli.memory_id)
    assert [version["event"] for version in history] == ["remember", "update", "forget", "restore"]


def memory_export(cli: Cli) -> None:
    cli.run("memories", "export", "--output", str(cli.tmp_path / "export.jsonl"))
    assert CORRECTED in (cli.tmp_path / "export.jsonl").read_text()


def memory_import(cli: Cli) -> None:
    summary = cli.json("memories", "import", str(cli.tmp_path / "export.jsonl"))
    assert (summary["added"], summary["unchanged"]) == ([], [cli.memory_id])


def sources(cli: Cli) -> None:
    assert cli.json("sources", "list") == []


def sources_add(cli: Cli) -> None:
    folder = cli.tmp_path / "claude-projects"
    folder.mkdir()
    cli.run("sources", "add", "claude-code", "--path", str(folder), "--name", "sessions")
    assert str(folder) in json.dumps(cli.json("sources", "list"))


def sources_list(cli: Cli) -> None:
    listed = json.dumps(cli.json("sources", "list"))
    assert "sessions" in listed and "claude-projects" in listed


def sources_remove(cli: Cli) -> None:
    cli.run("sources", "remove", "sessions")
    assert cli.json("sources", "list") == []


def db(cli: Cli) -> None:
    assert cli.run("db", "url").stdout.strip() == cli.db_url
    assert "nothing to start" in cli.run("db", "start").stderr  # the database is the test's, not embedded


def migrate(cli: Cli) -> None:
    assert cli.run("migrate").stdout.strip() == "up to date"


def setup(cli: Cli) -> None:
    home = cli.tmp_path / "user"
    diff = cli.run("setup", "claude-code", "--dry-run", "--home-dir", str(home)).stdout
    assert "pgrecall" in diff and "hook" in diff and not (home / ".claude").exists()
    planned = cli.run("setup", "claude-code", "--plugin", "--dry-run", "--home-dir", str(home)).stdout
    assert "plugins/pgrecall/hooks/hooks.json" in planned and "claude plugin marketplace add" in planned
    assert not (home / ".claude").exists() and not (cli.tmp_path / "home" / "claude-code-marketplace").exists()


def evaluate(cli: Cli) -> None:
    dataset = write_dataset(cli.tmp_path / "dataset")
    result = json.dumps(cli.json("eval", str(dataset), "--mode", "keyword"))
    assert "ndcg" in result.lower()


def hook(cli: Cli) -> None:
    prompt = {"hook_event_name": "UserPromptSubmit", "cwd": "/tmp", "prompt": "what happened with E-4711?"}
    answered = cli.run("hook", "prompt", input=json.dumps(prompt), PGRECALL_HOOK_DEADLINE="120")
    assert "incidents/e4711.md" in answered.stdout, answered.stderr
    start = {"hook_event_name": "SessionStart", "cwd": PROJECT, "source": "startup", "session_id": "s"}
    briefed = cli.run("hook", "session-start", input=json.dumps(start), PGRECALL_HOOK_DEADLINE="120")
    assert "quokka" in briefed.stdout, briefed.stderr
    # A session that ends, in an archive source: kept at once, indexed by a pgrecall index of its own.
    projects = cli.tmp_path / "claude-sessions-kept"
    (projects / "-work-quokka").mkdir(parents=True)
    transcript = projects / "-work-quokka" / "s1.jsonl"
    turn = {"type": "user", "sessionId": "s1", "cwd": PROJECT, "timestamp": "2026-12-07T10:00:00.000Z"}
    transcript.write_text(json.dumps({**turn, "message": {"role": "user", "content": "Ship the quokka."}}) + "\n")
    config = cli.tmp_path / "hook-config.toml"
    config.write_text(f'[[roots]]\nname = "claude-code"\npath = "{projects}"\narchive = true\n')
    end = {"hook_event_name": "SessionEnd", "session_id": "s1", "transcript_path": str(transcript), "reason": "exit"}
    ended = cli.run("hook", "session-end", input=json.dumps(end), PGRECALL_CONFIG=str(config))
    assert (ended.stdout, ended.stderr) == ("", "")
    assert (cli.tmp_path / "home" / "archive" / "claude-code" / "-work-quokka" / "s1.jsonl").is_file()
    log = cli.tmp_path / "home" / "kept-sessions.log"
    wait_for(lambda: log.is_file() and '"indexed": 1' in log.read_text(), 300, message="the session indexed")


def report(cli: Cli) -> None:  # after hook: its session-start run (session "s") is recorded
    found = cli.json("report")
    assert found["overall"]["injections"] >= 1 and "s" in {s["session_id"] for s in found["sessions"]}
    assert cli.run("report").stdout.startswith("overall\n")


def api(cli: Cli) -> None:
    port = str(free_port())
    process = cli.start("api", "--port", port)
    try:
        wait_for(lambda: _get(f"http://127.0.0.1:{port}/health"), 180, message="the API")
        hits = httpx.post(f"http://127.0.0.1:{port}/search", json={"query": "E-4711", "k": 1}, timeout=60)
        assert hits.json()["hits"][0]["path"] == "incidents/e4711.md"
    finally:
        cli.stop(process, ("api",))


def ui(cli: Cli) -> None:
    port = str(free_port())
    process = cli.start("ui", "--no-browser", "--port", port)
    try:
        page = wait_for(lambda: _get(f"http://127.0.0.1:{port}/?q=E-4711", html=True), 180, message="the page")
        assert "incidents/e4711.md" in page.text
    finally:
        cli.stop(process, ("ui",))


def _get(url: str, html: bool = False) -> httpx.Response | None:
    try:
        response = httpx.get(url, headers={"accept": "text/html"} if html else {}, timeout=60)
    except httpx.HTTPError:
        return None
    return response if response.status_code == 200 else None


def mcp(cli: Cli) -> None:
    async def session() -> None:
        params = StdioServerParameters(command=COMMAND[0], args=[*COMMAND[1:], "mcp"], env=cli.env)
        async with Client(params) as client:
            result = await client.call_tool("search_memory", {"query": "E-4711", "k": 1})
            assert not result.is_error, result.content[0].text
            assert result.structured_content["hits"][0]["path"] == "incidents/e4711.md"

    asyncio.run(asyncio.wait_for(session(), 180))
    cli.clean_end(("mcp",))  # the SDK's client ended the session and the server with it, without an error


def watch(cli: Cli) -> None:
    process = cli.start("watch", str(cli.notes))
    try:
        wait_for(lambda: process.events("service_started"), 180, message="watch")
        (cli.notes / "notes" / "heron.md").write_text("# Herons\n\nThe grey heron nests by the weir.\n")
        todo = "SELECT count(*) FROM procrastinate_jobs WHERE status = 'todo'"
        wait_for(lambda: query(cli.db_url, todo)[0][0] > 0, 120, message="the new note enqueued")
    finally:
        cli.stop(process, ("watch",))


def worker(cli: Cli) -> None:
    process = cli.start("worker")
    try:
        wait_for(lambda: queue_idle(cli.db_url), 180, message="the queue worked")
    finally:
        cli.stop(process, ("worker",))
    assert cli.json("search", "heron weir", "-k", "1", "--mode", "keyword")[0]["path"] == "notes/heron.md"


def serve(cli: Cli) -> None:
    process = cli.start("serve", str(cli.notes))
    try:
        wait_for((Path(cli.env["PGRECALL_HOME"]) / "search.sock").exists, 180, message="the warm socket")
        wait_for(lambda: process.events("service_ready"), 180, message="serve ready")
        hits = cli.json("search", "E-4711", "-k", "1", PGRECALL_MODEL=str(cli.tmp_path / "no-model"))
        assert hits[0]["path"] == "incidents/e4711.md"  # answered by serve: this process has no model
    finally:
        cli.stop(process, ("serve",))


# In the order they run: each acts on what the ones before indexed or saved.
COMMANDS: dict[str, Callable[[Cli], None]] = {
    "migrate": migrate,
    "db": db,
    "index": index,
    "search": search,
    "recent": recent,
    "status": status,
    "failures": failures,
    "models": models,
    "models add": models_add,
    "reembed": reembed,
    "remember": remember,
    "update": update,
    "memories": memories,
    "forget": forget,
    "restore": restore,
    "memories history": memory_history,
    "memories export": memory_export,
    "memories import": memory_import,
    "hook": hook,
    "report": report,
    "sources": sources,
    "sources add": sources_add,
    "sources list": sources_list,
    "sources remove": sources_remove,
    "setup": setup,
    "eval": evaluate,
    "api": api,
    "ui": ui,
    "mcp": mcp,
    "watch": watch,
    "worker": worker,
    "serve": serve,
}


def test_the_registry_names_every_command_of_the_parser():
    listed = {" ".join(path) for path in LISTED}
    assert listed - set(COMMANDS) == set(), "a command without a driver in COMMANDS"
    assert set(COMMANDS) - listed == set(), "a driver in COMMANDS whose command the parser no longer has"


@pytest.mark.parametrize("command", sorted(" ".join(path) for path in LISTED))
def test_every_command_has_help(command):
    done = run_cli(*command.split(), "--help", timeout=120)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert done.stdout.startswith(f"usage: pgrecall {command}")


@pytest.mark.slow
@pytest.mark.timeout(900)  # `models add` converts the multilingual model's weights
def test_every_command_runs_for_real(db_url, tmp_path):
    write_notes(tmp_path / "notes", {**ERROR_CODE_NOTES, "junk.bin": b"\x00\x01"})
    cli = Cli(service_env(db_url, tmp_path / "home"), tmp_path, db_url)
    for key, drive in COMMANDS.items():
        cli.ran.clear()
        started = time.monotonic()
        drive(cli)
        print(f"{key}: {time.monotonic() - started:.1f} s")
        assert tuple(key.split()) in cli.ran, f"the driver of `pgrecall {key}` never ran it to a clean end"
    print(f"CLI commands: {len(LISTED)} listed, {len(COMMANDS)} run for real")
