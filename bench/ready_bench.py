"""Time from starting `pgrecall serve NOTES` to READY=1 (sd_notify), embedded database; prints JSON.

Each run listens on a fresh notify socket, starts `pgrecall serve`, waits for
READY=1, then stops the service (SIGTERM) and the embedded server, so that the
next run pays the server's start again. Without --home every run gets a new,
empty PGRECALL_HOME (the server's first start: initdb, CREATE DATABASE,
migrations); with --home the same home is reused (e.g. one holding the SciFact
index):

    .venv/bin/python bench/ready_bench.py                      # fresh home, 3 runs
    .venv/bin/python bench/ready_bench.py --home ~/.local/share/pgrecall --notes ~/notes
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness.homes import machine_environment

PGRECALL = [sys.executable, "-m", "pgrecall.cli"]


def _env(home: Path, notify: str) -> dict[str, str]:
    env = machine_environment(prefixes=("PGRECALL_", "NOTIFY_", "WATCHDOG_"))
    env.update(
        PGRECALL_HOME=str(home),
        PGRECALL_LOG_FORMAT="json",
        PGRECALL_CONFIG=str(home / "no-config.toml"),
        NOTIFY_SOCKET=notify,
        WATCHDOG_USEC="60000000",
    )
    return env


def one_run(home: Path, notes: Path, timeout: float, log_path: Path) -> dict:
    address = f"@pgrecall-ready-bench-{os.getpid()}-{time.monotonic_ns()}"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    listener.bind(b"\0" + address[1:].encode())
    listener.settimeout(0.5)
    log = open(log_path, "ab")  # noqa: SIM115 (closed below)
    started = time.perf_counter()
    service = subprocess.Popen([*PGRECALL, "serve", str(notes)], env=_env(home, address), stdout=log, stderr=log)
    ready = None
    try:
        while ready is None and time.perf_counter() - started < timeout and service.poll() is None:
            try:
                data = listener.recv(4096).decode()
            except TimeoutError:
                continue
            if "READY=1" in data.split("\n"):
                ready = time.perf_counter() - started
    finally:
        if service.poll() is None:
            service.send_signal(signal.SIGTERM)
        code = service.wait(120)
        listener.close()
        log.close()
        subprocess.run([*PGRECALL, "db", "stop"], env=_env(home, ""), capture_output=True, timeout=120)
    return {"ready_s": None if ready is None else round(ready, 2), "exit_code": code}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--home", type=Path, help="reuse this PGRECALL_HOME (default: a new empty one per run)")
    parser.add_argument("--notes", type=Path, help="the folder to serve (default: 20 small generated notes)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=300.0)
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="pgrecall-ready-"))
    try:
        notes = args.notes
        if notes is None:
            notes = scratch / "notes"
            notes.mkdir()
            for number in range(20):
                (notes / f"n{number:02}.md").write_text(f"# Note {number}\n\nA short note about topic {number % 4}.")
        runs = []
        for number in range(args.runs):
            home = args.home.expanduser().resolve() if args.home else scratch / f"home{number}"
            runs.append(one_run(home, notes.resolve(), args.timeout, scratch / f"serve{number}.log"))
        times = [run["ready_s"] for run in runs if run["ready_s"] is not None]
        print(
            json.dumps(
                {
                    "fresh_home": args.home is None,
                    "notes": str(notes),
                    "runs": runs,
                    "median_ready_s": statistics.median(times) if times else None,
                }
            )
        )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
