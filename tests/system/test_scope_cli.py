"""Project scope and time as processes: `pgrecall search --project/--prefer/--here --since --before`,
`pgrecall remember --here` and `pgrecall recent`."""

from __future__ import annotations

import json
import os
import subprocess
import time

import pytest

from tests.integration.test_scope import PROJECT_NOTES, A, B
from tests.notes import write_notes
from tests.support.cli import COMMAND, run_cli

QUERY = "why did the export job fail after storage throttled reads"


def _json(result: subprocess.CompletedProcess) -> list:
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.fixture
def notes(index, tmp_path):
    root = write_notes(tmp_path / "notes", PROJECT_NOTES)
    # A note's own time is its modification time, a memory's its `created`, which is kept to the
    # second: a memory remembered within the second the notes were written would sort before them.
    ten_minutes_ago = time.time() - 600
    for path in root.rglob("*.md"):
        os.utime(path, (ten_minutes_ago, ten_minutes_ago))
    index(root)


def test_search_flags_scope_rank_and_time(notes, cli_env, tmp_path):
    def paths(*flags: str, cwd=None) -> list[str]:
        result = subprocess.run(
            [*COMMAND, "search", QUERY, "-k", "2", "--json", *flags],
            env=cli_env,
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=300,
            stdin=subprocess.DEVNULL,
        )
        return [hit["path"] for hit in _json(result)]

    assert paths("--prefer", A) == ["a/e4712.md", "b/e4711.md"]
    assert paths("--prefer", B) == ["b/e4711.md", "a/e4712.md"]
    assert paths("--project", B, "-k", "10", "--all") == ["b/e4711.md", "b/garden.md"]  # the unrelated one too
    assert paths("--since", "7d", "--before", "2100-01-01") == paths()
    assert paths("--before", "yesterday") == []
    # --here: the project of the current folder, taken to its git top-level.
    repo = tmp_path / "borealis"
    (repo / ".git").mkdir(parents=True)
    (repo / "src").mkdir()
    here = subprocess.run(
        [*COMMAND, "remember", "Borealis exports run at night.", "--here", "--json"],
        env=cli_env,
        cwd=repo / "src",
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    assert json.loads(here.stdout)["metadata"] == {"project": str(repo.resolve())}
    found = subprocess.run(
        [*COMMAND, "search", "when do exports run", "-k", "1", "--here", "--json"],
        env=cli_env,
        cwd=repo / "src",
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    assert _json(found)[0]["project"] == str(repo.resolve())

    refused = run_cli("search", QUERY, "--since", "soon", env=cli_env)
    assert refused.returncode != 0
    assert refused.stderr.strip().startswith("pgrecall: error: filter since must be an ISO date or time, today")


def test_recent_lists_newest_first_by_project_and_kind(notes, cli_env):
    saved = run_cli("remember", "Apollo demo moved to Friday.", "--project", A, "--json", env=cli_env)
    memory = json.loads(saved.stdout)
    listed = _json(run_cli("recent", "--project", A, "--json", env=cli_env))
    assert [d["path"] for d in listed][0] == memory["path"] and listed[0]["memory_id"] == memory["id"]
    assert {d["path"] for d in listed[1:]} == {"a/e4712.md", "a/deploy.md"}
    times = [d["occurred_at"] for d in listed]
    assert times == sorted(times, reverse=True)
    assert _json(run_cli("recent", "--kind", "claude_code_session", "--json", env=cli_env)) == []
    printed = run_cli("recent", "--days", "1", "--limit", "2", env=cli_env)
    assert printed.returncode == 0 and f"memory {memory['id']}" in printed.stdout
    assert len([line for line in printed.stdout.splitlines() if not line.startswith("   ")]) == 2
    bad = run_cli("recent", "--days", "0", env=cli_env)
    assert bad.returncode != 0 and "days must be an integer" in bad.stderr
