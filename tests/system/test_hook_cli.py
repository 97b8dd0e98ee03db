"""`pgrecall hook prompt` and `pgrecall hook session-start` as Claude Code runs them: a process, the
event's JSON on stdin, a real index; and every failure is silence on stdout, one line on stderr, exit 0."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from tests.support.cli import COMMAND, cli_env

FIXTURES = Path(__file__).parents[1] / "fixtures" / "hooks"
CWD = "/home/ada/src/ingest"  # the cwd of the fixtures' payloads
MEMORY_ID = "3f9c0a1b2c4d"
MEMORY = f"""---
id: {MEMORY_ID}
created: '2026-11-20T09:12:00+00:00'
updated: '2026-11-20T09:12:00+00:00'
title: Queue locking
tags: [architecture]
---
We chose PostgreSQL advisory locks over Redis for the ingest queue: one less service to run,
and the queue's jobs commit in the same transaction as the rows they write.
"""
OTHER_MEMORY = """---
id: 0a1b2c3d4e5f
created: '2026-11-21T10:00:00+00:00'
updated: '2026-11-21T10:00:00+00:00'
title: Garden planner beds
project: /home/ada/src/garden-planner
---
Raised beds for carrots need at least 30 cm of loose soil.
"""
NOTE = "# Deploy days\n\nDeploys go out on Tuesdays: Friday deploys broke on-call twice in October.\n"
INCIDENTS = {
    "incident-e4711.md": "# Incident E-4711\n\nThe checkout service timed out: the payment provider's TLS certificate expired.\n",
    "incident-e4712.md": "# Incident E-4712\n\nThe checkout service timed out: a connection pool of two was exhausted.\n",
    # Daily notes that only link to the incident: never shown in its place.
    "daily/2026-11-03.md": "# 2026-11-03\n\n- Standup: [[Incident E-4711]] follow-up still open.\n",
    "daily/2026-11-04.md": "# 2026-11-04\n\n- [[Incident E-4711]]\n",
}


def memory_note(memory_id: str, title: str, project: str, text: str) -> str:
    return (
        f"---\nid: {memory_id}\ncreated: '2026-11-19T10:00:00+00:00'\nupdated: '2026-11-19T10:00:00+00:00'\n"
        f"title: {title}\nproject: {project}\n---\n{text}\n"
    )


def session_lines(session_id: str, cwd: str, title: str, answer: str, sidechain: bool = False) -> str:
    common = {"sessionId": session_id, "cwd": cwd, "isSidechain": sidechain, "version": "2.0.46", "gitBranch": "main"}
    if sidechain:
        common["agentId"] = "a3f9c21"
    records = [
        {"type": "ai-title", "aiTitle": title, "sessionId": session_id},
        {
            **common,
            "type": "user",
            "uuid": f"{session_id[:8]}-u",
            "timestamp": "2026-11-22T08:00:00.000Z",
            "message": {"role": "user", "content": f"{title}?"},
        },
        {
            **common,
            "type": "assistant",
            "uuid": f"{session_id[:8]}-a",
            "timestamp": "2026-11-22T08:00:05.000Z",
            "message": {"role": "assistant", "content": [{"type": "text", "text": answer}]},
        },
    ]
    return "".join(json.dumps(record) + "\n" for record in records)


@pytest.fixture
def home(tmp_path):
    return tmp_path / "home"


@pytest.fixture
def indexed(index, home, tmp_path):
    """A memory folder (two memories, one of another project), a note, and two Claude Code sessions."""
    memories = home / "memories" / "2026" / "11"
    memories.mkdir(parents=True)
    (memories / f"2026-11-20-queue-locking-{MEMORY_ID}.md").write_text(MEMORY, encoding="utf-8")
    (memories / "2026-11-21-garden-planner-beds-0a1b2c3d4e5f.md").write_text(OTHER_MEMORY, encoding="utf-8")
    (memories / "2026-11-19-review-rule-aaaaaaaaaaaa.md").write_text(
        memory_note("aaaaaaaaaaaa", "Review rule", "/home/ada/src", "Every change gets a second reviewer."),
        encoding="utf-8",
    )
    (memories / "2026-11-18-ingest-owner-cccccccccccc.md").write_text(
        memory_note("cccccccccccc", "Ingest owner", "ingest", "Ada owns the ingest service."), encoding="utf-8"
    )
    (memories / "2026-11-18-garden-owner-dddddddddddd.md").write_text(
        memory_note("dddddddddddd", "Garden owner", "garden-planner", "Grace owns the garden planner."),
        encoding="utf-8",
    )
    (memories / "2026-11-19-old-ingest-bbbbbbbbbbbb.md").write_text(
        memory_note("bbbbbbbbbbbb", "Old ingest", "/home/ada/src/ingest-old", "The old ingest polled every minute."),
        encoding="utf-8",
    )
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "deploy-days.md").write_text(NOTE, encoding="utf-8")
    (notes / "daily").mkdir()
    for name, text in INCIDENTS.items():
        (notes / name).write_text(text, encoding="utf-8")
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    here = "11111111-2222-4333-8444-555555555555"
    there = "66666666-7777-4888-9999-000000000000"
    (sessions / f"{here}.jsonl").write_text(
        session_lines(here, CWD, "Move the ingest retries to a backoff", "Done: retries back off exponentially."),
        encoding="utf-8",
    )
    (sessions / f"{there}.jsonl").write_text(
        session_lines(there, "/home/ada/src/garden-planner", "Plan the carrot beds", "30 cm of soil."),
        encoding="utf-8",
    )
    starting = json.loads((FIXTURES / "session_start.json").read_text())["session_id"]
    (sessions / f"{starting}.jsonl").write_text(
        session_lines(starting, CWD, "The session starting now", "Hello."), encoding="utf-8"
    )
    agents = sessions / here / "subagents"
    agents.mkdir(parents=True)
    (agents / "agent-a3f9c21.jsonl").write_text(
        session_lines(here, CWD, "Read the retry code", "Read it.", sidechain=True), encoding="utf-8"
    )
    index(home / "memories", notes, sessions)
    return home


def hook(event: str, stdin: str, env: dict, timeout: float = 120) -> tuple[subprocess.CompletedProcess, float]:
    started = time.monotonic()
    done = subprocess.run(
        [*COMMAND, "hook", event], env=env, input=stdin, capture_output=True, text=True, timeout=timeout
    )
    return done, time.monotonic() - started


def prompt_payload(prompt: str) -> str:
    payload = json.loads((FIXTURES / "user_prompt_submit.json").read_text())
    return json.dumps({**payload, "prompt": prompt})


@pytest.fixture
def env(indexed, db_url, home):
    # The model's load is timed elsewhere (bench/hook_bench.py); here the deadline must not
    # cut a test short on a machine shared with other test runs.
    return cli_env(db_url, home, PGRECALL_HOOK_DEADLINE="60")


def test_a_relevant_prompt_adds_the_memory_with_its_id_and_nothing_for_chit_chat(env, home):
    done, _ = hook("prompt", prompt_payload("why is there no Redis for the ingest queue?"), env)
    assert done.returncode == 0 and done.stderr == ""
    lines = done.stdout.splitlines()
    assert lines[0] == "pgrecall, possibly relevant (get_document(id) returns an item in full):"
    assert re.fullmatch(rf"- Queue locking: memory {MEMORY_ID}, 2026-11-20 \(id \d+\)", lines[1]), lines[1]
    assert "advisory locks over Redis" in lines[2]
    assert str(home) not in done.stdout  # a memory is opened by its id, not its file
    assert "Deploy days" not in done.stdout and "carrots" not in done.stdout  # under the threshold

    for chit_chat in ("thanks", "run the tests again", "what's next?", "yes"):
        done, _ = hook("prompt", prompt_payload(chit_chat), env)
        assert (done.returncode, done.stdout, done.stderr) == (0, "", ""), chit_chat


def test_session_start_briefs_this_projects_memories_and_sessions(env):
    done, _ = hook("session-start", (FIXTURES / "session_start.json").read_text(), env)
    assert done.returncode == 0 and done.stderr == ""
    text = done.stdout
    assert text.startswith(f"pgrecall: recent memories and sessions for {CWD}, newest first")
    assert f"Queue locking: memory {MEMORY_ID} (id " in text
    assert "session: Move the ingest retries to a backoff (id " in text
    assert "Review rule: memory aaaaaaaaaaaa (id " in text  # of a folder the cwd is in
    assert "Ingest owner: memory cccccccccccc (id " in text  # project: ingest, the cwd's project by name
    assert "Garden owner" not in text  # project: garden-planner
    assert "Garden planner" not in text and "carrot" not in text  # another project's
    assert "Old ingest" not in text  # /home/ada/src/ingest-old is not a folder the cwd is in
    assert "The session starting now" not in text and "Read the retry code" not in text  # this one, a subagent's


def test_session_start_with_an_empty_index_prints_nothing(db_url, tmp_path):
    env = cli_env(db_url, tmp_path / "home", PGRECALL_HOOK_DEADLINE="60")
    done, _ = hook("session-start", (FIXTURES / "session_start.json").read_text(), env)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


@pytest.mark.parametrize(
    ("event", "stdin", "message"),
    [
        ("prompt", "", "pgrecall hook prompt: nothing added: no hook JSON on stdin"),
        ("prompt", "{oops", "pgrecall hook prompt: nothing added: the hook JSON on stdin is not JSON: "),
        ("session-start", "[]", "pgrecall hook session-start: nothing added: the hook JSON on stdin is not an object"),
    ],
)
def test_bad_input_is_one_line_on_stderr_nothing_on_stdout_and_exit_0(event, stdin, message, tmp_path):
    done, _ = hook(event, stdin, cli_env(home=tmp_path / "home", PGRECALL_HOOK_DEADLINE="60"))
    assert (done.returncode, done.stdout) == (0, "")
    assert done.stderr.startswith(message) and done.stderr.count("\n") == 1


@pytest.mark.parametrize("event", ["prompt", "session-start"])
def test_a_bad_setting_is_one_line_and_exit_0(event, tmp_path):
    done, _ = hook(
        event, prompt_payload("queue locking"), cli_env(home=tmp_path / "home", PGRECALL_HOOK_DEADLINE="soon")
    )
    assert (done.returncode, done.stdout) == (0, "")
    assert "PGRECALL_HOOK_DEADLINE" in done.stderr and done.stderr.count("\n") == 1


def test_an_index_never_set_up_is_one_line(empty_db_url, tmp_path):
    done, _ = hook(
        "prompt",
        prompt_payload("why is there no Redis for the ingest queue?"),
        cli_env(empty_db_url, tmp_path / "home", PGRECALL_HOOK_DEADLINE="60"),
    )
    assert (done.returncode, done.stdout) == (0, "")
    assert (
        done.stderr
        == "pgrecall hook prompt: nothing added: the index is not set up yet: run pgrecall index or serve first\n"
    )


def test_a_database_that_is_down_is_one_line(tmp_path):
    with socket.socket() as closed:  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    env = cli_env(f"postgresql://pgrecall@127.0.0.1:{port}/pgrecall", tmp_path / "home", PGRECALL_HOOK_DEADLINE="60")
    done, _ = hook("prompt", prompt_payload("why is there no Redis for the ingest queue?"), env)
    assert (done.returncode, done.stdout) == (0, "")
    assert done.stderr.startswith("pgrecall hook prompt: nothing added: ") and done.stderr.count("\n") == 1
    assert recorded(tmp_path / "home")[-1]["outcome"] == "error"


def recorded(home: Path) -> list[dict]:
    """The records of the one session a test ran hooks for."""
    (session,) = (home / "injections").glob("*.jsonl")
    return [json.loads(line) for line in session.read_text().splitlines()]


@pytest.fixture
def silent_server():
    """A port that accepts connections and never answers: a database that hangs."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                accepted.append(listener.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield listener.getsockname()[1]
    stop.set()
    thread.join(5)
    for conn in accepted:
        conn.close()
    listener.close()


@pytest.mark.parametrize("event", ["prompt", "session-start"])
def test_a_database_that_never_answers_ends_within_the_deadline(silent_server, tmp_path, event):
    deadline = 3.0
    env = cli_env(
        f"postgresql://pgrecall@127.0.0.1:{silent_server}/pgrecall?connect_timeout=600",
        tmp_path / "home",
        PGRECALL_HOOK_DEADLINE=str(deadline),
    )
    stdin = (
        prompt_payload("why is there no Redis?") if event == "prompt" else (FIXTURES / "session_start.json").read_text()
    )
    done, seconds = hook(event, stdin, env, timeout=60)
    assert (done.returncode, done.stdout) == (0, "")
    assert done.stderr == f"pgrecall hook {event}: nothing added, the 3 s deadline passed\n"
    assert recorded(tmp_path / "home")[-1]["outcome"] == "late"
    # Counted from the process's start as /proc tells it, in 10 ms ticks (its start and the uptime
    # both): up to 20 ms early by this test's clock. The slack above is for the interpreter's
    # exit and a busy machine.
    assert deadline - 0.05 <= seconds < deadline + 5


def test_a_stdin_that_never_ends_ends_within_the_deadline(tmp_path):
    env = cli_env(home=tmp_path / "home", PGRECALL_HOOK_DEADLINE="3")
    started = time.monotonic()
    process = subprocess.Popen(
        [*COMMAND, "hook", "prompt"], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        process.wait(timeout=60)  # stdin stays open: the hook's read never ends
        out, err = process.stdout.read(), process.stderr.read()
    finally:
        for stream in (process.stdin, process.stdout, process.stderr):
            stream.close()
    assert (process.returncode, out) == (0, b"")
    assert err == b"pgrecall hook prompt: nothing added, the 3 s deadline passed\n"
    assert time.monotonic() - started < 3 + 5


def test_an_identifier_the_prompt_names_is_added_whatever_its_similarity(env):
    done, _ = hook("prompt", prompt_payload("E-4711"), env)
    assert (done.returncode, done.stderr) == (0, "")
    assert re.search(r"^- Incident E-4711: /\S+/incident-e4711\.md, \d{4}-\d\d-\d\d \(id \d+\)$", done.stdout, re.M)
    assert "E-4712" not in done.stdout
    assert "2026-11-03" not in done.stdout and "2026-11-04" not in done.stdout  # notes that only link to it


def session_payload(cwd: str, session_id: str, transcript: Path, prompt: str | None = None) -> str:
    payload = {"session_id": session_id, "transcript_path": str(transcript), "cwd": cwd}
    if prompt is None:
        return json.dumps({**payload, "hook_event_name": "SessionStart", "source": "startup"})
    return json.dumps({**payload, "hook_event_name": "UserPromptSubmit", "prompt": prompt})


QUESTION = "why is there no Redis for the ingest queue?"


def test_injection_is_turned_off_by_the_setting(env, tmp_path):
    off = {**env, "PGRECALL_HOOK_INJECT": "off"}
    for event, stdin in (
        ("prompt", session_payload(CWD, "s-setting", tmp_path / "t.jsonl", QUESTION)),
        ("session-start", session_payload(CWD, "s-setting", tmp_path / "t.jsonl")),
    ):
        done, _ = hook(event, stdin, off)
        assert (done.returncode, done.stdout, done.stderr) == (0, "", ""), event
    assert hook("prompt", session_payload(CWD, "s-setting", tmp_path / "t.jsonl", QUESTION), env)[0].stdout


def test_injection_is_turned_off_by_a_file_in_the_project(env, tmp_path):
    project = tmp_path / "code" / "ingest"
    (project / "api").mkdir(parents=True)
    (project / ".git").mkdir()
    cwd = str(project / "api")
    stdin = session_payload(cwd, "s-project", tmp_path / "t.jsonl", QUESTION)
    assert "advisory locks" in hook("prompt", stdin, env)[0].stdout
    (project / ".pgrecall-off").touch()
    for event, payload in (
        ("prompt", stdin),
        ("session-start", session_payload(cwd, "s-project", tmp_path / "t.jsonl")),
    ):
        done, _ = hook(event, payload, env)
        assert (done.returncode, done.stdout, done.stderr) == (0, "", ""), event


@pytest.mark.parametrize(
    ("off", "on"),
    [
        ("/pgrecall-off", "/pgrecall-on"),  # the slash command as typed
        ("pgrecall injections: off\n\nAnswer in one sentence.", "pgrecall injections: on\n\nAnswer."),  # expanded
    ],
)
def test_injection_is_turned_off_for_one_session_by_a_prompt_and_back_on(env, tmp_path, off, on):
    transcript = tmp_path / "t.jsonl"
    done, _ = hook("prompt", session_payload(CWD, "s-1", transcript, off), env)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert hook("prompt", session_payload(CWD, "s-1", transcript, QUESTION), env)[0].stdout == ""
    assert hook("session-start", session_payload(CWD, "s-1", transcript), env)[0].stdout == ""  # resume, compact
    assert "advisory locks" in hook("prompt", session_payload(CWD, "s-2", transcript, QUESTION), env)[0].stdout
    hook("prompt", session_payload(CWD, "s-1", transcript, on), env)
    assert "advisory locks" in hook("prompt", session_payload(CWD, "s-1", transcript, QUESTION), env)[0].stdout


def assistant_line(at: str, text: str = "", tool: dict | None = None) -> str:
    content = [{"type": "text", "text": text}] if text else []
    if tool:
        content.append({"type": "tool_use", "id": "toolu_01", "name": tool["name"], "input": tool["input"]})
    record = {"type": "assistant", "timestamp": at, "message": {"role": "assistant", "content": content}}
    return json.dumps(record) + "\n"


def test_every_run_is_recorded_and_the_report_tells_what_was_used(env, home, tmp_path):
    from tests.support.cli import run_cli

    used, unused = tmp_path / "used.jsonl", tmp_path / "unused.jsonl"
    used.write_text("", encoding="utf-8")
    unused.write_text("", encoding="utf-8")
    hook("session-start", session_payload(CWD, "s-used", used), env)
    done, _ = hook("prompt", session_payload(CWD, "s-used", used, QUESTION), env)
    memory_id = re.search(r"memory ([0-9a-f]{12})", done.stdout)[1]
    hook("prompt", session_payload(CWD, "s-used", used, "thanks"), env)
    hook("prompt", session_payload(CWD, "s-unused", unused, QUESTION), env)
    later = "2999-01-01T00:00:00.000Z"  # after the runs, whatever the clock
    used.write_text(
        assistant_line(later, "We kept advisory locks, so the jobs commit in the same transaction as their rows.")
        + assistant_line(later, tool={"name": "mcp__pgrecall__update_memory", "input": {"memory_id": memory_id}}),
        encoding="utf-8",
    )
    unused.write_text(assistant_line(later, "Redis would add a service; I can look into it."), encoding="utf-8")

    records = [json.loads(line) for line in (home / "injections" / "s-used.jsonl").read_text().splitlines()]
    assert [(r["event"], r.get("prompt"), r["outcome"]) for r in records] == [
        ("session-start", None, "injected"),
        ("prompt", 1, "injected"),
        ("prompt", 2, "skipped"),
    ]
    injected = records[1]
    assert injected["tokens"] == (len(done.stdout) + 3) // 4 and 0 < injected["seconds"] < 60
    assert injected["items"][0]["memory_id"] == memory_id and injected["transcript_path"] == str(used)

    report = run_cli("report", "--json", env=env)
    assert report.returncode == 0, report.stderr
    found = json.loads(report.stdout)
    sessions = {s["session_id"]: s for s in found["sessions"]}
    assert [i["used"] for i in sessions["s-used"]["injected"] if i["event"] == "prompt"][0] == "tool"
    assert [i["used"] for i in sessions["s-unused"]["injected"]] == [None]
    assert found["overall"]["runs"] == 4 and found["overall"]["tokens"] > 0

    text = run_cli("report", env=env)
    assert text.returncode == 0 and text.stdout.startswith("overall\n") and "s-unused" in text.stdout
    one = run_cli("report", "--session", "s-used", env=env)
    assert f"prompt 1: id {injected['items'][0]['document_id']} Queue locking - used: tool" in one.stdout
    assert "s-unused" not in one.stdout.split("per day")[0]
    assert oct((home / "injections").stat().st_mode & 0o777) == "0o700"


def test_a_record_that_cannot_be_written_never_costs_the_prompt(env, home):
    (home / "injections").write_text("a file where the folder would be", encoding="utf-8")
    done, _ = hook("prompt", prompt_payload(QUESTION), env)
    assert (done.returncode, done.stderr) == (0, "") and "advisory locks" in done.stdout
