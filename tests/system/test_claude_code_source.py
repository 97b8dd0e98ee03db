"""Claude Code's sessions as a source that is kept: `pgrecall sources add claude-code`, then
`serve` follows a session as it is written, and keeps what Claude Code deletes, whether
serve is running or not. Real processes, watcher, queue, database and model."""

from __future__ import annotations

import json
import shutil
import stat
from pathlib import Path

import pytest

from tests.service import Process, query, queue_idle, service_env, texts, wait_for
from tests.support.cli import run_cli

pytestmark = pytest.mark.slow

FIXTURES = Path(__file__).parent.parent / "fixtures" / "claude_code"
CARROTS = "5e8f1a2b-0c3d-4e5f-8a9b-1c2d3e4f5a6b.jsonl"
LIVE = "0c0ffee0-1111-4222-8333-444455556666.jsonl"


def record(kind: str, number: int, text: str) -> str:
    message = {"role": kind, "content": text if kind == "user" else [{"type": "text", "text": text}]}
    return json.dumps(
        {
            "type": kind,
            "sessionId": LIVE.removesuffix(".jsonl"),
            "uuid": f"00000000-0000-4000-8000-{number:012}",
            "parentUuid": None,
            "isSidechain": False,
            "cwd": "/home/ada/src/orbit",
            "version": "2.1.173",
            "gitBranch": "main",
            "timestamp": f"2026-11-30T10:{number:02}:00.000Z",
            "message": message,
        }
    )


TURNS = [
    ("user", "Why does the telescope mount drift after midnight?"),
    ("assistant", "The polar alignment is off by two degrees; the drift grows with hour angle."),
    ("user", "Write down the fix for the mount: the counterweight must move 4 cm outward."),
    ("assistant", "Noted: the counterweight moves 4 cm outward and the periodic error correction is retrained."),
]


def archived(db_url: str, path: str) -> bool:
    rows = query(db_url, "SELECT metadata ? 'archived_at' FROM pgrecall.documents WHERE path = %s", (path,))
    return bool(rows) and rows[0][0]


def search(env: dict, text: str) -> list[dict]:
    result = run_cli("search", text, "--json", "-k", "3", env=env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_serve_follows_a_live_session_and_keeps_what_claude_code_deletes(db_url, tmp_path):
    home = tmp_path / "home"
    projects = tmp_path / "claude" / "projects"
    project = projects / "-home-ada-src-orbit"
    project.mkdir(parents=True)
    shutil.copy(FIXTURES / CARROTS, project / CARROTS)
    env = service_env(db_url, home, PGRECALL_CONFIG=str(tmp_path / "config.toml"))
    added = run_cli("sources", "add", "claude-code", "--path", str(projects), env=env)
    assert added.returncode == 0, added.stderr
    listed = run_cli("sources", "list", env=env)
    assert listed.stdout.split() == ["claude-code", str(projects), "archive"]
    archive = home / "archive" / "claude-code" / "-home-ada-src-orbit"
    live = f"-home-ada-src-orbit/{LIVE}"

    service = Process(["serve"], env, tmp_path / "serve.log")
    try:
        wait_for(lambda: "raised bed" in texts(db_url, f"-home-ada-src-orbit/{CARROTS}"), 120, message="initial index")
        with open(project / LIVE, "w") as session:  # Claude Code writes a session one record at a time
            for number, (kind, text) in enumerate(TURNS):
                session.write(record(kind, number, text) + "\n")
                session.flush()
                if number == 0:
                    wait_for(lambda: "telescope mount" in texts(db_url, live), 60, message="first turn")
        wait_for(lambda: "periodic error correction" in texts(db_url, live), 60, message="the later turns")
        hits = search(env, "how far must the counterweight move")
        assert hits[0]["path"] == live and "4 cm outward" in hits[0]["text"]
        assert (archive / LIVE).read_bytes() == (project / LIVE).read_bytes()
        assert stat.S_IMODE((archive / LIVE).stat().st_mode) == 0o600

        (project / LIVE).unlink()  # Claude Code's cleanup, with serve running
        wait_for(lambda: archived(db_url, live), 60, message="archived while serving")
        hits = search(env, "how far must the counterweight move")
        assert hits[0]["path"] == live and hits[0]["metadata"]["archive_copy"] == str(archive / LIVE)
        assert service.stop() == 0
    finally:
        if service.popen.poll() is None:
            service.kill()

    (project / CARROTS).unlink()  # deleted while pgrecall is not running
    (archive / LIVE).unlink()  # deleting in the archive itself removes it
    restarted = Process(["serve"], env, tmp_path / "restarted.log")
    try:
        wait_for(lambda: archived(db_url, f"-home-ada-src-orbit/{CARROTS}"), 120, message="archived at restart")
        wait_for(lambda: not texts(db_url, live) and queue_idle(db_url), 60, message="its copy deleted")
        hits = search(env, "how deep must a raised bed be for carrots")
        assert hits[0]["path"] == f"-home-ada-src-orbit/{CARROTS}" and hits[0]["metadata"]["archived_at"]
        status = run_cli("status", env=env)
        assert "1 archived (deleted at the source, kept in" in status.stdout, status.stdout
        assert restarted.stop() == 0
    finally:
        if restarted.popen.poll() is None:
            restarted.kill()
