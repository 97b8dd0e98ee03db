"""`pgrecall search` end to end (process start to exit), with `pgrecall serve` running and without it.

    .venv/bin/python bench/warm_bench.py [--runs 100] [--home DIR] [--python PYTHON]

Indexes examples/notes into the embedded database of a data directory of its own
(default: a new temporary one), then runs RUNS searches as `PYTHON -m pgrecall.cli
search QUERY -k 5 --json`, one process after the other, the queries taken in turn
from QUERIES: first without serve (each process answers in-process: it loads the model),
then with `pgrecall serve` running (each asks its warm socket, PGRECALL_HOME/search.sock).
The embedded database runs in both phases, started before any clock. Every run must
exit 0 and print the same hits in both phases. Prints one JSON object: p50, p95, mean,
min and max in milliseconds per phase, the command, and two figures that a loaded machine
distorts less: each search process's own CPU time (user + system, p50), and the p50 of
`PYTHON -c pass` (the interpreter's bare start, the floor of any run) measured beside them.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

from harness.homes import indexed_home
from harness.processes import start, stop, stop_database, wait_until, warm_socket_answers
from harness.timing import percentile

QUERIES = ("E-4711", "how are results ranked", "ledger export timed out", "retry policy", "vacuum settings")


def cpu_ms() -> float:
    """CPU time of the children waited for so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (usage.ru_utime + usage.ru_stime) * 1000


def summary(samples: list[float], cpu: list[float]) -> dict[str, float]:
    return {
        "cpu_p50_ms": round(statistics.median(cpu), 1),
        "p50_ms": round(statistics.median(samples), 1),
        "p95_ms": round(percentile(samples, 95), 1),
        "mean_ms": round(statistics.fmean(samples), 1),
        "min_ms": round(min(samples), 1),
        "max_ms": round(max(samples), 1),
    }


def runs(python: str, env: dict[str, str], count: int) -> tuple[list[float], list[float], list[str]]:
    """Wall and CPU milliseconds of each search process, and what each printed."""
    samples, cpu, outputs = [], [], []
    for number in range(count):
        command = [python, "-m", "pgrecall.cli", "search", QUERIES[number % len(QUERIES)], "-k", "5", "--json"]
        used = cpu_ms()
        started = time.perf_counter()
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
        samples.append((time.perf_counter() - started) * 1000)
        cpu.append(cpu_ms() - used)
        if done.returncode != 0:
            raise SystemExit(f"search failed: {done.stderr.strip()}")
        outputs.append(done.stdout)
    return samples, cpu, outputs


def bare_start_ms(python: str, count: int = 20) -> float:
    samples = []
    for _ in range(count):
        started = time.perf_counter()
        subprocess.run([python, "-c", "pass"], check=True)
        samples.append((time.perf_counter() - started) * 1000)
    return round(statistics.median(samples), 1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--home", help="the PGRECALL_HOME to use (default: a new temporary one)")
    parser.add_argument("--python", default=sys.executable, help="the interpreter that runs pgrecall")
    args = parser.parse_args()
    if not 1 <= args.runs <= 10_000:
        parser.error("--runs must be from 1 to 10000")

    home, env, pgrecall = indexed_home(args.python, args.home, "pgrecall-warm-bench-")
    runs(args.python, env, 1)  # the database started and the model's files exported before any clock

    bare_before = bare_start_ms(args.python)
    cold, cold_cpu, cold_out = runs(args.python, env, args.runs)
    serve = start([*pgrecall, "serve"], env, home / "serve.log")
    try:
        # Until the warm socket answers (pgrecall.warm_client.answers): serve is then ready to search.
        wait_until(lambda: warm_socket_answers(args.python, env), serve, "serve's warm socket")
        warm, warm_cpu, warm_out = runs(args.python, env, args.runs)
        bare_after = bare_start_ms(args.python)
    finally:
        stop(serve)
    stop_database(pgrecall, env)
    if cold_out != warm_out:
        raise SystemExit("the searches through serve's socket printed other hits than in-process")
    result = {
        "runs": args.runs,
        "command": f"{args.python} -m pgrecall.cli search QUERY -k 5 --json",
        "queries": list(QUERIES),
        "with_serve": summary(warm, warm_cpu),
        "without_serve": summary(cold, cold_cpu),
        "bare_python_start_p50_ms": {"before": bare_before, "after": bare_after},
        "load_average": os.getloadavg()[0],
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
