"""Cold `pgrecall search`: a new process per query, the database already running.

    .venv/bin/python bench/cold_bench.py [--backends torch,onnx-int8] [--before REF] [--runs 9] [--json]

For each embedding backend, a home of its own (an embedded server, kept running)
indexes the notes (default examples/notes) with that backend, then times
`pgrecall search QUERY` (hybrid: imports, database check, reader login, model
load, query embedding, both arms) and `pgrecall search QUERY --mode keyword`,
each as a fresh process, `--runs` times, and reports p50/p95 wall seconds and
whether the process imported torch (`python -X importtime`).

`--before REF` also times the CLI of an earlier commit (git archive of REF laid
out as the installed package, run from PYTHONPATH) against the torch home: the
before and after of one run, on the same machine state.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from pgrecall.composition.evaluation import percentile

REPO = Path(__file__).resolve().parents[1]
CLI = "import sys; from pgrecall.cli import main; sys.exit(main())"


def package_of(ref: str, into: Path) -> Path:
    """The commit's tree laid out as the installed package (pgrecall/, with worker/, api/, sql/ inside)."""
    into.mkdir(parents=True, exist_ok=True)
    archive = into / "tree.tar"
    subprocess.run(["git", "-C", str(REPO), "archive", "-o", str(archive), ref], check=True)
    tree = into / "tree"
    with tarfile.open(archive) as tar:
        tar.extractall(tree, filter="data")
    package = into / "site" / "pgrecall"
    shutil.copytree(tree / "pgrecall", package)
    for part in ("worker", "api", "sql"):
        shutil.copytree(tree / part, package / part)
    return into / "site"


def run(command: list[str], env: dict[str, str], cwd: Path) -> tuple[float, subprocess.CompletedProcess]:
    started = time.perf_counter()
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, timeout=300)
    return time.perf_counter() - started, done


def time_searches(label: str, env: dict, cwd: Path, query: str, runs: int) -> dict:
    result = {}
    for mode in ("hybrid", "keyword"):
        argv = [sys.executable, "-c", CLI, "search", query, "-k", "5", "--json"]
        if mode == "keyword":
            argv += ["--mode", "keyword"]
        seconds = []
        for _ in range(runs):
            elapsed, done = run(argv, env, cwd)
            if done.returncode != 0:
                raise SystemExit(f"{label} {mode}: {done.stderr.strip().splitlines()[-1]}")
            seconds.append(elapsed)
        _, traced = run([sys.executable, "-X", "importtime", *argv[1:]], env, cwd)
        imported = {line.rsplit("|", 1)[-1].strip() for line in traced.stderr.splitlines() if "|" in line}
        result[mode] = {
            "p50_s": round(statistics.median(seconds), 3),
            "p95_s": round(percentile(seconds, 95), 3),
            "imports_torch": "torch" in imported,
            "imports_onnxruntime": "onnxruntime" in imported,
        }
        print(
            f"{label:<22} {mode:<8} p50 {result[mode]['p50_s']:.3f} s  p95 {result[mode]['p95_s']:.3f} s  "
            f"torch imported: {result[mode]['imports_torch']}",
            file=sys.stderr,
        )
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backends", default="torch,onnx-int8")
    parser.add_argument("--notes", type=Path, default=REPO / "examples" / "notes")
    parser.add_argument("--query", default="how are results ranked")
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--before", help="a git ref whose CLI to time against the torch home too")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="pgrecall-cold-"))
    base = {k: v for k, v in os.environ.items() if not k.startswith("PGRECALL_")}
    pgrecall = [sys.executable, "-c", CLI]
    homes: dict[str, dict[str, str]] = {}
    results: dict[str, dict] = {}
    try:
        for backend in [b for b in args.backends.split(",") if b]:
            env = {**base, "PGRECALL_HOME": str(work / backend), "PGRECALL_EMBED_BACKEND": backend}
            homes[backend] = env
            _, done = run([*pgrecall, "index", str(args.notes), "--quiet", "--json"], env, REPO)
            if done.returncode != 0:
                raise SystemExit(f"index with {backend}: {done.stderr.strip()[-500:]}")
            results[backend] = time_searches(backend, env, REPO, args.query, args.runs)
        if args.before:
            site = package_of(args.before, work / "before")
            env = {**(homes.get("torch") or next(iter(homes.values()))), "PYTHONPATH": str(site)}
            env.pop("PGRECALL_EMBED_BACKEND", None)
            results[f"before ({args.before}, torch)"] = time_searches(
                f"before {args.before}", env, work, args.query, args.runs
            )
    finally:
        for env in homes.values():
            subprocess.run([*pgrecall, "db", "stop"], env=env, cwd=REPO, capture_output=True)
        shutil.rmtree(work, ignore_errors=True)
    output = {"query": args.query, "runs": args.runs, "notes": str(args.notes), "results": results}
    print(json.dumps(output) if args.json else json.dumps(output, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
