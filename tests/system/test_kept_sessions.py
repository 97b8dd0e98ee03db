"""`pgrecall hook session-end` and `pgrecall hook pre-compact` as Claude Code runs them: a process,
the event's JSON on stdin naming a real transcript file. The transcript is in the archive when the
hook returns and searchable soon after, with a worker running and without one; with the database
down the hook still exits 0 with one line, and the session is found once the database is back.
Real processes, queue, database and model."""

from __future__ import annotations

import json
import socket
import subprocess
import time
from pathlib import Path

import pytest

from tests.service import Process, query, queue_idle, service_env, texts, wait_for
from tests.support.cli import COMMAND, run_cli

pytestmark = pytest.mark.slow

FIXTURES = Path(__file__).parents[1] / "fixtures" / "hooks"
PROJECT = "-home-ada-src-orbit"
SESSION = "0c0ffee0-1111-4222-8333-444455556666"
TURNS = [
    ("user", "Why does the telescope mount drift after midnight?"),
    ("assistant", "The polar alignment is off by two degrees; the drift grows with hour angle."),
    ("user", "Write down the fix for the mount: the counterweight must move 4 cm outward."),
    ("assistant", "Noted: the counterweight moves 4 cm outward and the periodic error correction is retrained."),
]


def transcript_text() -> str:
    """A Claude Code session file as Claude Code writes it: one JSON record per line."""
    lines = [json.dumps({"type": "ai-title", "aiTitle": "Telescope mount drift", "sessionId": SESSION})]
    for number, (kind, text) in enumerate(TURNS):
        message = {"role": kind, "content": text if kind == "user" else [{"type": "text", "text": text}]}
        lines.append(
            json.dumps(
                {
                    "type": kind,
                    "sessionId": SESSION,
                    "uuid": f"00000000-0000-4000-8000-{number:012}",
                    "parentUuid": None,
                    "isSidechain": False,
                    "cwd": "/home/ada/src/orbit",
                    "version": "2.1.337",
                    "gitBranch": "main",
                    "timestamp": f"2026-12-07T10:{number:02}:00.000Z",
                    "message": message,
                }
            )
        )
    return "\n".join(lines) + "\n"


@pytest.fixture
def claude(tmp_path):
    """Claude Code's projects folder with the session's transcript; (projects, transcript)."""
    projects = tmp_path / "claude" / "projects"
    (projects / PROJECT).mkdir(parents=True)
    transcript = projects / PROJECT / f"{SESSION}.jsonl"
    transcript.write_text(transcript_text(), encoding="utf-8")
    return projects, transcript


def environment(db_url: str, tmp_path: Path, **extra: str) -> dict[str, str]:
    # The deadline is the default's in production (1.5 s); here the machine is shared with other
    # test runs, and a test asserts behaviour, never timing.
    return service_env(
        db_url, tmp_path / "home", PGRECALL_CONFIG=str(tmp_path / "config.toml"), PGRECALL_HOOK_DEADLINE="30", **extra
    )


def add_source(env: dict, projects: Path) -> None:
    added = run_cli("sources", "add", "claude-code", "--path", str(projects), env=env)
    assert added.returncode == 0, added.stderr


def payload(event: str, transcript: Path) -> str:
    name = {"session-end": "session_end.json", "pre-compact": "pre_compact.json"}[event]
    data = json.loads((FIXTURES / name).read_text())
    return json.dumps({**data, "transcript_path": str(transcript)})


def hook(event: str, stdin: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([*COMMAND, "hook", event], env=env, input=stdin, capture_output=True, text=True, timeout=120)


def copy_of(tmp_path: Path) -> Path:
    return tmp_path / "home" / "archive" / "claude-code" / PROJECT / f"{SESSION}.jsonl"


def found(env: dict) -> list[dict]:
    result = run_cli("search", "how far must the counterweight move", "--json", "-k", "3", env=env)
    assert result.returncode == 0, result.stderr
    return [hit for hit in json.loads(result.stdout) if hit["path"] == f"{PROJECT}/{SESSION}.jsonl"]


def indexer_done(log: Path) -> bool:
    """The detached `pgrecall index --json` wrote its summary: it has ended its work."""
    return log.is_file() and any(line.startswith("{") for line in log.read_text().splitlines())


@pytest.mark.parametrize("event", ["session-end", "pre-compact"])
def test_without_a_worker_the_hook_keeps_the_session_and_indexes_it_in_the_background(db_url, tmp_path, claude, event):
    projects, transcript = claude
    env = environment(db_url, tmp_path)
    add_source(env, projects)

    done = hook(event, payload(event, transcript), env)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert copy_of(tmp_path).read_bytes() == transcript.read_bytes()  # before the hook returned

    log = tmp_path / "home" / "kept-sessions.log"
    wait_for(lambda: indexer_done(log), 180, message="the detached pgrecall index")
    summary = json.loads(next(line for line in log.read_text().splitlines() if line.startswith("{")))
    assert (summary["indexed"], summary["failed"]) == (1, 0)
    [hit] = found(env)
    assert "4 cm outward" in hit["text"] and hit["metadata"]["session_id"] == SESSION
    assert queue_idle(db_url)


def test_with_a_worker_running_the_hook_enqueues_and_the_worker_indexes_it(db_url, tmp_path, claude):
    projects, transcript = claude
    env = environment(db_url, tmp_path)
    add_source(env, projects)
    worker = Process(["worker"], env, tmp_path / "worker.log")  # works the queue only: no watcher, no reconciliation
    try:
        wait_for(
            lambda: query(db_url, "SELECT count(*) FROM procrastinate_workers")[0][0] > 0, 120, message="worker up"
        )
        done = hook("session-end", payload("session-end", transcript), env)
        assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
        assert copy_of(tmp_path).read_bytes() == transcript.read_bytes()
        wait_for(lambda: "4 cm outward" in texts(db_url, f"{PROJECT}/{SESSION}.jsonl"), 120, message="indexed")
        assert not (tmp_path / "home" / "kept-sessions.log").exists()  # no indexer of the hook's own
        assert found(env)
        assert worker.stop() == 0
    finally:
        if worker.popen.poll() is None:
            worker.kill()


def test_with_the_database_down_the_session_is_kept_and_found_once_it_is_back(db_url, tmp_path, claude):
    projects, transcript = claude
    up = environment(db_url, tmp_path)
    add_source(up, projects)
    with socket.socket() as closed:  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    down = {**up, "PGRECALL_DATABASE_URL": f"postgresql://pgrecall@127.0.0.1:{port}/pgrecall"}

    started = time.monotonic()
    done = hook("session-end", payload("session-end", transcript), down)
    assert (done.returncode, done.stdout) == (0, "")
    assert done.stderr.startswith("pgrecall hook session-end: kept in the archive, indexed later: ")
    assert done.stderr.count("\n") == 1
    assert copy_of(tmp_path).read_bytes() == transcript.read_bytes()
    assert time.monotonic() - started < 30  # within its deadline, whatever the database does
    assert not (tmp_path / "home" / "kept-sessions.log").exists()

    # The database is back: the next reconciliation of the configured roots finds the session.
    indexed = run_cli("index", "--json", env=up)
    assert indexed.returncode == 0, indexed.stderr
    [hit] = found(up)
    assert "4 cm outward" in hit["text"]


@pytest.mark.parametrize("event", ["session-end", "pre-compact"])
def test_a_transcript_outside_every_archive_source_is_one_line(tmp_path, claude, event):
    _, transcript = claude
    env = environment("postgresql://pgrecall@127.0.0.1:9/pgrecall", tmp_path)  # no source added
    done = hook(event, payload(event, transcript), env)
    assert (done.returncode, done.stdout) == (0, "")
    assert done.stderr == (
        f"pgrecall hook {event}: not kept: {transcript} is in no archive source (pgrecall sources add claude-code)\n"
    )
    assert not (tmp_path / "home" / "archive").exists()


@pytest.mark.parametrize(
    ("stdin", "message"),
    [
        ("", "no hook JSON on stdin"),
        ('{"hook_event_name": "SessionEnd", "session_id": "x"}', "the SessionEnd JSON has no transcript_path"),
        ('{"hook_event_name": "Stop", "transcript_path": "/x.jsonl"}', "this hook is for SessionEnd events, got Stop"),
    ],
)
def test_bad_input_is_one_line_and_exit_0(tmp_path, stdin, message):
    env = environment("postgresql://pgrecall@127.0.0.1:9/pgrecall", tmp_path)
    done = hook("session-end", stdin, env)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", f"pgrecall hook session-end: {message}\n")
