"""From a Claude Code session's end to its transcript searchable: `pgrecall hook session-end` as
Claude Code runs it, with `pgrecall serve` running, with only `pgrecall worker`, or with neither.

    .venv/bin/python bench/session_end_bench.py [--mode serve|worker|none] [--runs 10]
        [--backend onnx-int8]

A home of its own (its embedded database, kept running as `pgrecall db start` leaves it), the
claude-code source added on a projects folder of its own. Each run writes a new session file
(Claude Code's records, four turns, one word of its own), then starts `pgrecall hook session-end`
with the SessionEnd JSON on stdin, as Claude Code does when the session ends. A first run, not
timed, warms up (serve and worker load the model on their first job). Timed from the hook's
start: its exit (the transcript must be in the archive by then; what it wrote on stderr is
reported) and the moment the session's chunks holding its word are in the index (polled every 20 ms). `serve` follows the
projects folder too, so its watcher may index the new file before the hook's job does: that is
what a user sees. `worker` only works the queue: the hook's enqueue is the only way in.
`none` runs no service: the hook starts a `pgrecall index` of its own (a model load each time).
The target (issue 42): with serve, p50 <= 2 s.
"""

from __future__ import annotations

import argparse
import json
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psycopg
from harness.homes import machine_environment
from harness.timing import percentile

CLI = "import sys; from pgrecall.cli import main; sys.exit(main())"
PROJECT = "-home-ada-src-orbit"
WORDS = ["kestrel", "marmot", "ocelot", "pangolin", "quetzal", "tapir", "wombat", "axolotl", "bittern", "caracal"]


def transcript(session: str, word: str) -> str:
    turns = [
        ("user", f"Why does the {word} telescope mount drift after midnight?"),
        ("assistant", f"The {word} mount's polar alignment is off by two degrees; the drift grows with hour angle."),
        ("user", f"Write down the fix for the {word} mount: the counterweight must move 4 cm outward."),
        ("assistant", f"Noted: the {word} counterweight moves 4 cm outward and the error correction is retrained."),
    ]
    lines = []
    for number, (kind, text) in enumerate(turns):
        message = {"role": kind, "content": text if kind == "user" else [{"type": "text", "text": text}]}
        record = {"type": kind, "sessionId": session, "uuid": f"{session[:8]}-{number}", "parentUuid": None}
        record |= {"isSidechain": False, "cwd": "/home/ada/src/orbit", "version": "2.1.337"}
        lines.append(json.dumps(record | {"timestamp": f"2026-12-07T10:0{number}:00.000Z", "message": message}))
    return "\n".join(lines) + "\n"


def cli(env: dict, *args: str, **options) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", CLI, *args], env=env, capture_output=True, text=True, **options)


def wait_for(condition, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.02)


def searchable(url: str, path: str, word: str) -> bool:
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pgrecall.chunks c JOIN pgrecall.documents d ON d.id = c.document_id"
            " WHERE d.path = %s AND c.text LIKE %s",
            (path, f"%{word}%"),
        ).fetchone()
    return bool(row and row[0])


def percentiles(values: list[float]) -> dict:
    return {
        "p50": round(statistics.median(values), 3),
        "p95": round(percentile(values, 95), 3),
        "max": round(max(values), 3),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mode", choices=("serve", "worker", "none"), default="serve")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--backend", default="onnx-int8")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="pgrecall-session-end-"))
    projects = work / "projects"
    (projects / PROJECT).mkdir(parents=True)
    env = machine_environment()
    env |= {"PGRECALL_HOME": str(work / "home"), "PGRECALL_CONFIG": str(work / "config.toml")}
    env |= {"PGRECALL_EMBED_BACKEND": args.backend, "PGRECALL_STALLED_SECONDS": "5"}
    assert cli(env, "sources", "add", "claude-code", "--path", str(projects)).returncode == 0
    migrated = cli(env, "migrate")
    assert migrated.returncode == 0, migrated.stderr
    url = cli(env, "db", "url").stdout.strip()
    service = None
    if args.mode != "none":
        log = (work / f"{args.mode}.log").open("w")
        service = subprocess.Popen([sys.executable, "-c", CLI, args.mode], env=env, stdout=log, stderr=log)
    hook_seconds, searchable_seconds, said = [], [], []
    kept_log = work / "home" / "kept-sessions.log"  # the detached indexers' summaries (--mode none)
    try:
        if service is not None:
            with psycopg.connect(url) as conn:
                wait_for(
                    lambda: conn.execute("SELECT count(*) FROM procrastinate_workers").fetchone()[0] > 0,
                    600,
                    "the worker",
                )
            time.sleep(2)  # serve's first reconciliation of the empty folder
        for run in range(-1, args.runs):  # run -1 warms up: serve and worker load the model on their first job
            word = f"{WORDS[run % len(WORDS)]}{run + 1}"
            session = f"0c0ffee0-1111-4222-8333-{run + 1:012}"
            path = projects / PROJECT / f"{session}.jsonl"
            path.write_text(transcript(session, word), encoding="utf-8")
            stdin = json.dumps(
                {"session_id": session, "transcript_path": str(path), "cwd": "/home/ada/src/orbit"}
                | {"hook_event_name": "SessionEnd", "reason": "other"}
            )
            started = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-c", CLI, "hook", "session-end"], env=env, input=stdin, capture_output=True, text=True
            )
            hook_took = time.perf_counter() - started
            copy = work / "home" / "archive" / "claude-code" / PROJECT / f"{session}.jsonl"
            assert done.returncode == 0 and copy.read_bytes() == path.read_bytes(), done.stderr
            document = f"{PROJECT}/{session}.jsonl"
            wait_for(lambda d=document, w=word: searchable(url, d, w), 600, f"run {run} searchable")
            if run >= 0:
                said.extend(done.stderr.splitlines())  # a deadline passed, the database away: one line each
                hook_seconds.append(hook_took)
                searchable_seconds.append(time.perf_counter() - started)
            if args.mode == "none":  # the detached indexer's exit, before the next run starts one
                wait_for(lambda n=run + 1: kept_log.read_text().count("{") > n, 600, "its exit")
    finally:
        if service is not None:
            service.send_signal(signal.SIGTERM)
            service.wait(timeout=120)
        cli(env, "db", "stop")
    print(
        json.dumps(
            {
                "mode": args.mode,
                "runs": args.runs,
                "backend": args.backend,
                "hook_seconds": percentiles(hook_seconds),
                "session_end_to_searchable_seconds": percentiles(searchable_seconds),
                "hook_stderr_lines": said,
                "each_run": [[round(h, 3), round(t, 3)] for h, t in zip(hook_seconds, searchable_seconds, strict=True)],
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
