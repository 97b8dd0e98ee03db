"""`pgrecall hook prompt` end to end, as Claude Code runs it: a new process per prompt, without serve
or (--serve) with `pgrecall serve` running, whose warm socket the hook then asks.

    .venv/bin/python bench/hook_bench.py [--runs 100] [--notes examples/notes] [--serve] [--json]

A home of its own (an embedded server, started once and kept running, as `pgrecall db start`
leaves it) indexes the notes, then `--runs` processes of `pgrecall hook prompt` each get a
UserPromptSubmit JSON on stdin, cycling through PROMPTS (questions the notes answer and
chit-chat, all long enough to be searched: the hook's skip of very short prompts would make
the figures look better than a real question costs). Each is timed from the process's start
to its exit; p50 and p95 wall seconds are reported, with how many runs added context, added
nothing, or ran out of the deadline (PGRECALL_HOOK_DEADLINE, as the environment sets it; set it
high to time the whole work on a busy machine), the CPU seconds per process (user + system,
which a busy machine inflates less than wall time), the peak resident memory per process
(the model PGRECALL_MODEL names, the bundled one when unset), and the floor: the same command with an
empty stdin, which pays the interpreter's start and the CLI's imports and nothing else.
The targets: with serve p50 <= 120 ms, p95 <= 250 ms; without serve p50 <= 0.7 s.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from processes import as_installed

from pgrecall import warm_client
from pgrecall.composition.evaluation import percentile

REPO = Path(__file__).resolve().parents[1]
CLI = "import sys; from pgrecall.cli import main; sys.exit(main())"
PROMPTS = [
    "what caused incident E-4711?",
    "how should I tune postgres shared_buffers?",
    "when do I plant the tomatoes in the garden?",
    "how are the search results ranked?",
    "what was the fix for E-4712?",
    "run the tests again",
    "thanks, that works now",
    "what's next on the list?",
    "commit this and open a PR",
    "why did the checkout fail with a timeout?",
]


def payload(prompt: str, cwd: str) -> str:
    return json.dumps(
        {
            "session_id": "4f1c9e2a-7b3d-4c8e-9a61-2d5e8f0b3c47",
            "transcript_path": f"{cwd}/.claude/4f1c9e2a-7b3d-4c8e-9a61-2d5e8f0b3c47.jsonl",
            "cwd": cwd,
            "permission_mode": "default",
            "hook_event_name": "UserPromptSubmit",
            "prompt": prompt,
        }
    )


def timed(argv: list[str], env: dict[str, str], stdin: str) -> tuple[float, float, float, subprocess.CompletedProcess]:
    """(wall seconds, CPU seconds, peak resident MB, the finished process) of one run. Reaped by
    os.wait4 for the process's own peak: RUSAGE_CHILDREN's is the largest of every child so far."""
    started = time.perf_counter()
    process = subprocess.Popen(
        argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    process.stdin.write(stdin)
    process.stdin.close()
    out, err = process.stdout.read(), process.stderr.read()  # a hook writes a few kB: no pipe fills
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    done = subprocess.CompletedProcess(argv, process.returncode, out, err)
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, done


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--notes", type=Path, default=REPO / "examples" / "notes")
    parser.add_argument("--serve", action="store_true", help="with pgrecall serve running (the warm socket)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="pgrecall-hook-bench-"))
    kept = ("PGRECALL_MODEL_CACHE", "PGRECALL_MODEL")  # the model under test, and where its files are
    env = {k: v for k, v in os.environ.items() if not k.startswith("PGRECALL_") or k in kept}
    env.update({"PGRECALL_HOME": str(work / "home"), "PGRECALL_LOG_FORMAT": "json"})
    if "PGRECALL_HOOK_DEADLINE" in os.environ:
        env["PGRECALL_HOOK_DEADLINE"] = os.environ["PGRECALL_HOOK_DEADLINE"]
    env = as_installed(env, sys.executable)
    pgrecall = [sys.executable, "-c", CLI]
    seconds: list[float] = []
    cpu_seconds: list[float] = []
    resident_mb: list[float] = []
    floor: list[float] = []
    outcomes = {"added context": 0, "added nothing": 0, "deadline passed": 0, "error": 0}
    serve = None
    try:
        done = subprocess.run([*pgrecall, "index", str(args.notes), "--quiet"], env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"index: {done.stderr.strip()[-500:]}")
        if args.serve:
            serve = subprocess.Popen(
                [*pgrecall, "serve", str(args.notes)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            )
            deadline = time.monotonic() + 300
            while not warm_client.answers_at(work / "home" / "search.sock"):
                if time.monotonic() > deadline or serve.poll() is not None:
                    raise SystemExit("serve's warm socket never answered")
                time.sleep(0.2)
        for number in range(args.runs):
            stdin = payload(PROMPTS[number % len(PROMPTS)], str(REPO))
            wall, cpu, resident, done = timed([*pgrecall, "hook", "prompt"], env, stdin)
            seconds.append(wall)
            cpu_seconds.append(cpu)
            resident_mb.append(resident)
            if done.returncode != 0:
                raise SystemExit(f"hook prompt exited {done.returncode}: {done.stderr.strip()}")
            if "deadline passed" in done.stderr:
                outcomes["deadline passed"] += 1
            elif done.stderr:
                outcomes["error"] += 1
                print(done.stderr.strip(), file=sys.stderr)
            else:
                outcomes["added context" if done.stdout else "added nothing"] += 1
        for _ in range(max(1, args.runs // 10)):  # the floor: start, imports, a refused empty stdin
            floor.append(timed([*pgrecall, "hook", "prompt"], env, "")[0])
    finally:
        if serve is not None:
            serve.terminate()
            serve.wait(timeout=120)
        subprocess.run([*pgrecall, "db", "stop"], env=env, capture_output=True)
        shutil.rmtree(work, ignore_errors=True)
    result = {
        "runs": args.runs,
        "notes": str(args.notes),
        "serve": args.serve,
        "p50_s": round(statistics.median(seconds), 3),
        "p95_s": round(percentile(seconds, 95), 3),
        "max_s": round(max(seconds), 3),
        "cpu_p50_s": round(statistics.median(cpu_seconds), 3),
        "rss_p50_mb": round(statistics.median(resident_mb), 1),
        "rss_max_mb": round(max(resident_mb), 1),
        "model": env.get("PGRECALL_MODEL", "bundled"),
        "floor_p50_s": round(statistics.median(floor), 3),
        "outcomes": outcomes,
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "cpus": os.cpu_count(),
    }
    if args.json:
        print(json.dumps(result))
    else:
        print(
            f"pgrecall hook prompt, {args.runs} processes, {'with' if args.serve else 'no'} serve: p50 {result['p50_s']:.3f} s, "
            f"p95 {result['p95_s']:.3f} s, max {result['max_s']:.3f} s, CPU p50 {result['cpu_p50_s']:.3f} s, "
            f"resident p50 {result['rss_p50_mb']} MB, max {result['rss_max_mb']} MB; "
            f"floor (empty stdin) p50 {result['floor_p50_s']:.3f} s; {outcomes}; "
            f"load average {result['load_average']} on {result['cpus']} CPUs"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
