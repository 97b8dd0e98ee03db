"""A Claude Code session written line by line while `pgrecall serve` follows it: what is embedded.

    .venv/bin/python bench/live_session_bench.py [--lines 2000] [--burst 10] [--pause 0.7]
        [--backend onnx-int8]

Starts `pgrecall -v serve FOLDER` (a fresh PGRECALL_HOME, its own embedded database), then
appends the records of one session (the shapes bench/sessions_bench.py writes) one line at a
time, flushed, as Claude Code does: a turn of 1 to 2 x `--burst` lines, then `--pause`
seconds (longer than the watcher's half-second debounce) before the next turn. The service
indexes the file whenever it settles; each run's `file_indexed` event says how many chunks it embedded and
reused. When the last line is in and the service has indexed it, prints JSON: the runs, the
chunks embedded over all of them, the final chunk count (what one from-scratch index embeds),
and what re-embedding the whole file on every run would have cost.
"""

from __future__ import annotations

import argparse
import json
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness.homes import machine_environment
from sessions_bench import records  # noqa: E402

CLI = "import sys; from pgrecall.cli import main; sys.exit(main())"
SESSION = "0b5e7c1a-7a0f-4a51-9c55-4f0dbf9e2a10"


def indexed_events(log: Path, name: str) -> list[dict]:
    events = []
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if event.get("event") == "file_indexed" and str(event.get("path", "")).endswith(name):
            events.append(event)
    return events


def wait_for(condition, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.2)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lines", type=int, default=2000)
    parser.add_argument("--burst", type=int, default=10)
    parser.add_argument("--pause", type=float, default=0.7)
    parser.add_argument("--backend", default="onnx-int8")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="pgrecall-live-"))
    folder = work / "projects" / "-home-ada-src-shop"
    folder.mkdir(parents=True)
    session = folder / f"{SESSION}.jsonl"
    log = work / "serve.log"
    env = machine_environment()
    env |= {"PGRECALL_HOME": str(work / "home"), "PGRECALL_EMBED_BACKEND": args.backend}
    lines = [json.dumps(r) for r in records(random.Random(11), SESSION, args.lines, 0)]
    session.write_text(lines[0] + "\n", encoding="utf-8")
    with log.open("w") as out:
        serve = subprocess.Popen(
            [sys.executable, "-c", CLI, "-v", "serve", str(work / "projects")], env=env, stdout=out, stderr=out
        )
    try:
        wait_for(lambda: '"service_ready"' in log.read_text(errors="replace"), 600, "the service")
        started = time.perf_counter()
        rng = random.Random(5)
        with session.open("a", encoding="utf-8") as file:
            turn, in_turn = rng.randint(1, 2 * args.burst), 0
            for line in lines[1:]:
                file.write(line + "\n")
                file.flush()
                in_turn += 1
                if in_turn == turn:
                    time.sleep(args.pause)
                    turn, in_turn = rng.randint(1, 2 * args.burst), 0
        written = time.perf_counter() - started
        final = subprocess.run(
            [sys.executable, "-c", CLI, "index", str(work / "projects"), "--json"],
            env=env,
            capture_output=True,
            text=True,
        )
        serve.send_signal(signal.SIGTERM)
        serve.wait(timeout=120)
    finally:
        if serve.poll() is None:
            serve.kill()
        subprocess.run([sys.executable, "-c", CLI, "db", "stop"], env=env, capture_output=True)
    events = indexed_events(log, session.name)
    summary = json.loads(final.stdout.strip().splitlines()[-1])
    chunks = summary["chunks"] if summary["indexed"] else events[-1]["chunks"]
    embedded = sum(e["chunks_embedded"] for e in events) + summary["chunks_embedded"]
    result = {
        "lines": args.lines,
        "seconds_writing": round(written, 1),
        "runs_by_serve": len(events),
        "final_index_after_serve": {k: summary[k] for k in ("indexed", "unchanged", "chunks_embedded")},
        "final_chunks": chunks,
        "chunks_embedded_in_all_runs": embedded,
        "embedded_per_final_chunk": round(embedded / chunks, 3),
        "chunks_if_each_run_embedded_all": sum(e["chunks"] for e in events),
        "runs": [(e["chunks"], e["chunks_embedded"]) for e in events],
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
