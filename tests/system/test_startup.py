"""First start under contention: many pgrecall commands at the same moment on a fresh home.

An MCP server that Claude Desktop launches at login, a search, and the service
may all start together on a machine where nothing exists yet. The embedded
server must be started once, the database created once, the migrations and
the queue's schema applied once, and every command must come up.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request

import pytest

from pgrecall.postgres import database
from pgrecall.settings import load_settings
from tests.service import wait_for
from tests.support.cli import start_cli

pytestmark = pytest.mark.slow

ROUNDS = 5
LONG_RUNNING = ("serve", "watch", "worker")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def tiny_beir_dataset(folder):
    (folder / "qrels").mkdir(parents=True)
    corpus = [
        {"_id": "d1", "title": "Tides", "text": "The moon drives the tides of the sea."},
        {"_id": "d2", "title": "Bread", "text": "Sourdough needs a lively starter."},
    ]
    (folder / "corpus.jsonl").write_text("".join(json.dumps(entry) + "\n" for entry in corpus))
    (folder / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "what causes tides"}) + "\n")
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    return folder


def mcp_messages():
    def message(number, method, params):
        return json.dumps({"jsonrpc": "2.0", "id": number, "method": method, "params": params}) + "\n"

    initialize = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}
    return (
        message(1, "initialize", initialize)
        + json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})
        + "\n"
        + message(2, "tools/call", {"name": "get_document", "arguments": {"id_or_path": "no-such-note.md"}})
    )


class Started:
    def __init__(self, name, args, env, log_dir, stdin=None):
        self.name = name
        self.log_path = log_dir / f"{name}.log"
        self.log = open(self.log_path, "wb")  # noqa: SIM115 (closed in finish)
        self.popen = start_cli(
            *args,
            env=env,
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE if stdin is not None else self.log,
            stderr=self.log,
        )
        if stdin is not None:
            self.popen.stdin.write(stdin.encode())
            self.popen.stdin.flush()

    def text(self) -> str:
        return self.log_path.read_text(errors="replace")

    def finish(self, timeout=120):
        try:
            return self.popen.wait(timeout)
        finally:
            self.log.close()


def run_round(home, notes, dataset, log_dir):
    env = dict(os.environ)
    env.pop("PGRECALL_DATABASE_URL", None)
    env.update(
        {
            "PGRECALL_HOME": str(home),
            "PGRECALL_LOG_FORMAT": "json",
            "PGRECALL_CONFIG": str(home / "no-config.toml"),
            "PGRECALL_WORKERS": "2",
        }
    )
    port = free_port()
    commands = {
        "serve": ["serve", str(notes)],
        "watch": ["watch", str(notes)],
        "worker": ["worker"],
        "index": ["index", str(notes), "--quiet"],
        "search": ["search", "tides", "--mode", "keyword"],
        "api": ["api", "--port", str(port)],
        "eval": ["eval", str(dataset), "--mode", "keyword"],
    }
    started = {name: Started(name, args, env, log_dir) for name, args in commands.items()}
    started["mcp"] = Started("mcp", ["mcp"], env, log_dir, stdin=mcp_messages())
    failures = []
    try:
        for name in ("index", "search", "eval"):
            if started[name].finish(300) != 0:
                failures.append(f"{name}: {started[name].text()[-2000:]}")
        for name in LONG_RUNNING:
            process = started[name]
            with contextlib.suppress(AssertionError):
                wait_for(lambda p=process: "service_started" in p.text() or p.popen.poll() is not None, 120)
            if process.popen.poll() is not None or "service_started" not in process.text():
                failures.append(f"{name} did not come up: {process.text()[-2000:]}")

        def health():
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as response:
                    return response.status == 200
            except OSError:
                return started["api"].popen.poll() is not None

        wait_for(health, 120, interval=0.2, message="api health")
        if started["api"].popen.poll() is not None:
            failures.append(f"api: {started['api'].text()[-2000:]}")

        mcp = started["mcp"]
        answers = []
        deadline = time.monotonic() + 120
        while len(answers) < 2 and time.monotonic() < deadline:
            line = mcp.popen.stdout.readline()
            if not line:
                break
            answers.append(json.loads(line))
        if len(answers) < 2 or "no document" not in json.dumps(answers[1]):
            failures.append(f"mcp: {answers} {mcp.text()[-2000:]}")
    finally:
        for name in (*LONG_RUNNING, "api"):
            if started[name].popen.poll() is None:
                started[name].popen.send_signal(signal.SIGTERM)
        for name in (*LONG_RUNNING, "api"):
            code = started[name].finish(60)
            if code != 0:
                failures.append(f"{name} exited {code} on SIGTERM: {started[name].text()[-1000:]}")
        mcp = started["mcp"]
        mcp.popen.stdin.close()
        mcp.finish(60)
        mcp.popen.stdout.close()
    return failures


def test_eight_commands_started_at_once_on_a_fresh_home_all_come_up(tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "tides.txt").write_text("The moon drives the tides.")
    dataset = tiny_beir_dataset(tmp_path / "tinybeir")
    for number in range(ROUNDS):
        home = tmp_path / f"home{number}"
        log_dir = tmp_path / f"logs{number}"
        log_dir.mkdir()
        try:
            failures = run_round(home, notes, dataset, log_dir)
        finally:
            database.stop_embedded(load_settings({"PGRECALL_HOME": str(home)}))
            shutil.rmtree(home, ignore_errors=True)
        assert failures == [], f"round {number + 1}: " + "\n".join(failures)
