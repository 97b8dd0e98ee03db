"""One way to follow several sources: `pgrecall sources add notes|claude-code`, then `serve`,
`watch` and `index` without a path follow the config file's roots; and `status` says a root is
watched only while a serve runs. Real processes, watcher, queue, database and model."""

from __future__ import annotations

import json
import shutil
import signal
from pathlib import Path

import pytest

from tests.notes import write_notes
from tests.service import Process, query, service_env, texts, wait_for
from tests.support.cli import run_cli

pytestmark = pytest.mark.slow

FIXTURES = Path(__file__).parent.parent / "fixtures" / "claude_code"
CARROTS = "5e8f1a2b-0c3d-4e5f-8a9b-1c2d3e4f5a6b.jsonl"


def cli(env: dict, *args: str) -> str:
    result = run_cli(*args, env=env)
    assert result.returncode == 0, result.stderr
    return result.stdout


def roots_by_name(env: dict) -> dict[str, dict]:
    return {root["name"] or root["path"]: root for root in json.loads(cli(env, "status", "--json"))["roots"]}


def watch_line(env: dict, name: str) -> str:
    lines = cli(env, "status").splitlines()
    at = next((number for number, line in enumerate(lines) if line.startswith(f"root:       {name} (")), None)
    return "" if at is None else lines[at + 1]  # "": not registered yet


def test_notes_and_claude_code_sessions_are_two_commands_and_serve(db_url, tmp_path):
    notes = write_notes(tmp_path / "notes", {"harbour.md": "# Harbour\n\nThe ferry to the island leaves at dawn."})
    project = tmp_path / "claude" / "projects" / "-home-ada-src-orbit"
    project.mkdir(parents=True)
    shutil.copy(FIXTURES / CARROTS, project / CARROTS)
    extra = write_notes(tmp_path / "extra", {"tides.md": "# Tides\n\nSpring tides follow the full moon."})
    config = tmp_path / "config" / "config.toml"
    env = service_env(db_url, tmp_path / "home", PGRECALL_CONFIG=str(config))

    assert "added root notes" in cli(env, "sources", "add", "notes", str(notes))
    assert "nothing changed" in cli(env, "sources", "add", "notes", str(notes))  # again: idempotent
    cli(env, "sources", "add", "claude-code", "--path", str(tmp_path / "claude" / "projects"))
    listed = json.loads(cli(env, "sources", "list", "--json"))
    assert [(e["name"], e["path"], e["archive"]) for e in listed] == [
        ("notes", str(notes), False),
        ("claude-code", str(tmp_path / "claude" / "projects"), True),
    ]

    service = Process(["serve", str(extra)], env, tmp_path / "serve.log")  # a PATH adds to the config's roots
    try:
        wait_for(lambda: "ferry to the island" in texts(db_url, "harbour.md"), 120, message="the notes")
        wait_for(lambda: "raised bed" in texts(db_url, f"-home-ada-src-orbit/{CARROTS}"), 60, message="the sessions")
        wait_for(lambda: "full moon" in texts(db_url, "tides.md"), 60, message="the folder named for this run")
        roots = wait_for(
            lambda: (r := roots_by_name(env)) and all(r[n]["watched"] for n in ("notes", "claude-code", "extra")) and r,
            60,
            message="all three watched",
        )
        assert roots["claude-code"]["archive_folder"] == str(tmp_path / "home" / "archive" / "claude-code")
        assert service.stop() == 0
    finally:
        if service.popen.poll() is None:
            service.kill()

    assert "removed root notes" in cli(env, "sources", "remove", str(notes))  # by its folder
    assert [e["name"] for e in json.loads(cli(env, "sources", "list", "--json"))] == ["claude-code"]


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGKILL], ids=["sigterm", "sigkill"])
def test_status_says_watched_only_while_serve_runs(db_url, tmp_path, stop):
    notes = write_notes(tmp_path / "notes", {"a.md": "# A\n\nAlpha note about lighthouses."})
    env = service_env(db_url, tmp_path / "home")
    watching = "  watch:    watched by events (inotify)"
    stopped = "  watch:    not watched now (last watched by events (inotify) until "

    service = Process(["serve", str(notes)], env, tmp_path / "serve.log")
    try:
        wait_for(lambda: watch_line(env, "notes").startswith(watching), 120, message="watched")
        assert roots_by_name(env)["notes"]["watched"] is True
        service.popen.send_signal(stop)
        service.popen.wait(60)
    finally:
        if service.popen.poll() is None:
            service.kill()
        service.log_file.close()

    if stop == signal.SIGTERM:  # the watcher dropped its lease before the process exited
        assert watch_line(env, "notes").startswith(stopped), watch_line(env, "notes")
    else:  # the server drops the dead session's lock as soon as it sees its socket closed
        wait_for(lambda: watch_line(env, "notes").startswith(stopped), 30, message="not watched")
    root = roots_by_name(env)["notes"]
    assert (root["watched"], root["watch_mode"]) == (False, "events")
    # /status (the web page) says so too: its report is status.report's


def test_index_without_a_path_indexes_the_configured_roots_or_says_how_to_add_one(db_url, tmp_path):
    notes = write_notes(tmp_path / "notes", {"a.md": "# A\n\nAlpha note about lighthouses.", "b.md": "# B\n\nBeta."})
    env = service_env(db_url, tmp_path / "home", PGRECALL_CONFIG=str(tmp_path / "config.toml"))
    refused = run_cli("index", env=env)
    assert refused.returncode == 1
    assert refused.stderr.strip().splitlines() == [
        "pgrecall: error: no folders to follow: add one with `pgrecall sources add notes PATH` "
        "(it goes into the config file, PGRECALL_CONFIG), or name it on the command line"
    ]
    cli(env, "sources", "add", "notes", str(notes))
    summary = json.loads(cli(env, "index", "--json"))
    assert (summary["indexed"], summary["failed"]) == (2, 0)
    root = roots_by_name(env)["notes"]  # registered by its name, as serve registers it
    assert (root["path"], root["indexed"], root["files"], root["followed"]) == (str(notes), 2, 2, True)
    assert "lighthouses" in texts(db_url, "a.md")


def test_indexing_one_file_makes_no_root_of_its_folder(db_url, tmp_path):
    loose = write_notes(tmp_path / "loose", {"a.md": "# A\n\nAlpha.", "b.md": "# B\n\nBeta."})
    env = service_env(db_url, tmp_path / "home")
    cli(env, "index", str(loose / "a.md"))
    root = roots_by_name(env)[str(loose)]
    assert (root["indexed"], root["files"], root["name"]) == (1, None, None)  # b.md is not "missing"
    assert (root["followed"], root["watched"]) == (False, False)
    shown = cli(env, "status")
    assert f"indexed:    {loose}: 1 files indexed, last " in shown and "(a folder not followed)" in shown
    assert " of 2 files" not in shown


def test_a_file_inside_a_configured_root_is_indexed_under_that_root(db_url, tmp_path):
    notes = write_notes(tmp_path / "notes", {"sub/c.md": "# C\n\nGamma note about tides.", "d.md": "# D\n\nDelta."})
    config = tmp_path / "config.toml"
    config.write_text(f'[[roots]]\nname = "notes"\npath = "{notes}"\n')
    env = service_env(db_url, tmp_path / "home", PGRECALL_CONFIG=str(config))
    cli(env, "index", str(notes / "sub" / "c.md"))
    documents = query(db_url, "SELECT source_root, path FROM pgrecall.documents")
    assert documents == [(str(notes), "sub/c.md")]  # not a second root at notes/sub
    roots = roots_by_name(env)
    assert list(roots) == ["notes"]
    assert (roots["notes"]["indexed"], roots["notes"]["files"]) == (1, 2)  # the root counts its file not indexed yet
