"""The index and search cost of the language work (issue 21), isolated: installs (or settings) taking
turns in one run, each side indexing the same corpus on a fresh home and timing hybrid search over
the same queries.

    nice -n 19 .venv/bin/python bench/language_latency.py --corpus ../shared/data/scifact --rounds 3 \\
        --side base=/work/wt-base --side main=. --side main-en=.:PGRECALL_LANGUAGES=en

A side is LABEL=DIR[:VAR=VALUE,...]: DIR is a worktree with its own .venv (the project installed
editable there); each of its runs is this file in --child mode, run by DIR/.venv/bin/python with DIR
as working directory, under nice 19, with the side's variables set. The sides take turns within a
round and the order rotates from round to round (A B C, B C A, C A B, ...), so drifting load falls
on every side alike. The first side is the reference: every ratio is side / reference, both as the
ratio of the medians over rounds and as the median of the ratios within a round (the paired figure,
less sensitive to load that changes between rounds).

A child writes one Markdown note per corpus entry (as bench/index_bench.py does), indexes the folder
through the real pipeline (queue, workers, detection, chunking, batched embedding, COPY) into a
fresh embedded database, then times `--passes` passes of hybrid and of keyword search over the
corpus's queries (k=10, one pooled connection, warmed by one search). The model cache is shared by
every run of a side (PGRECALL_MODEL_CACHE under the run's folder, filled by a warm-up child before
round 1), so no run converts or optimizes the model inside its timings.
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

HERE = Path(__file__).resolve()
DEFAULT_CORPUS = HERE.parents[1].parent / "shared" / "data" / "scifact"


def child(args: argparse.Namespace) -> int:
    sys.path.insert(0, str(HERE.parent))
    from index_bench import measure_pipeline, write_corpus

    from pgrecall.api.searcher import Searcher
    from pgrecall.embedders.embedding import embedder_for
    from pgrecall.logs import configure_logging
    from pgrecall.postgres import database
    from pgrecall.postgres.migrator import migrate
    from pgrecall.settings import load_settings

    configure_logging()
    settings = load_settings()
    work = Path(os.environ["PGRECALL_HOME"]).parent
    notes = work / "notes"
    notes.mkdir()
    note_count = write_corpus(args.corpus, notes, args.limit)
    url = database.database_url(settings)
    pgdata = database.pgdata_path(settings)
    try:
        with database.connect(url) as conn:
            migrate(conn)
        embedder = embedder_for(settings)
        embedder.load().embed_batch(["warm up the model"])
        pipeline = measure_pipeline(settings, url, notes, pgdata)
        with open(args.corpus / "queries.jsonl", encoding="utf-8") as lines:
            queries = [json.loads(line)["text"] for line in lines]
        if args.queries:
            queries = queries[: args.queries]
        latencies: dict[str, list[float]] = {"hybrid": [], "keyword": []}
        with Searcher(url, settings, embedder=embedder, pool_size=1) as searcher:
            searcher.search(queries[0], k=10)  # warm the pool and caches
            for _ in range(args.passes):
                for query in queries:
                    for label, kwargs in (("hybrid", {}), ("keyword", {"mode": "keyword"})):
                        started = time.perf_counter()
                        searcher.search(query, k=10, **kwargs)
                        latencies[label].append((time.perf_counter() - started) * 1000)
    finally:
        database.stop_embedded(settings)
    print(
        json.dumps(
            {
                "notes": note_count,
                "chunks": pipeline["chunks"],
                "index_s": pipeline["seconds"],
                "chunks_per_s": pipeline["chunks_per_s"],
                "process_cpu_s": pipeline["process_cpu_s"],
                "server_cpu_s": pipeline["server_cpu_s"],
                "searches": len(latencies["hybrid"]),
                "hybrid_p50_ms": round(statistics.median(latencies["hybrid"]), 2),
                "keyword_p50_ms": round(statistics.median(latencies["keyword"]), 2),
            }
        )
    )
    return 0


def parse_side(value: str) -> tuple[str, Path, dict[str, str]]:
    label, _, rest = value.partition("=")
    directory, _, variables = rest.partition(":")
    env = dict(item.split("=", 1) for item in variables.split(",") if item)
    return label, Path(directory).resolve(), env


def run_child(side, args, run_dir: Path, caches: dict[str, Path], limit: int | None) -> dict:
    label, directory, env_extra = side
    work = Path(tempfile.mkdtemp(prefix=f"{label}-", dir=run_dir))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PGRECALL_")}
    env.update(env_extra)
    env["PGRECALL_HOME"] = str(work / "home")
    env["PGRECALL_MODEL_CACHE"] = str(caches[str(directory)])
    command = ["nice", "-n", "19", str(directory / ".venv" / "bin" / "python"), str(HERE), "--child"]
    command += ["--corpus", str(args.corpus.resolve()), "--passes", str(args.passes)]
    if limit is not None:
        command += ["--limit", str(limit)]
    if args.queries:
        command += ["--queries", str(args.queries)]
    load_before = os.getloadavg()[0]
    done = subprocess.run(command, cwd=directory, env=env, capture_output=True, text=True)
    load_after = os.getloadavg()[0]
    shutil.rmtree(work, ignore_errors=True)
    if done.returncode != 0:
        raise SystemExit(f"{label}: child failed ({done.returncode}):\n{done.stderr[-3000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["load"] = [round(load_before, 1), round(load_after, 1)]
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--limit", type=int, default=None, help="index only the first N entries")
    parser.add_argument("--queries", type=int, default=None, help="only the first N queries (default: all)")
    parser.add_argument("--passes", type=int, default=1, help="passes over the queries per run")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--side", action="append", default=[], help="LABEL=DIR[:VAR=VALUE,...]; the first is the reference"
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args)
    if len(args.side) < 2:
        parser.error("name at least two --side")
    sides = [parse_side(value) for value in args.side]
    run_dir = Path(tempfile.mkdtemp(prefix="pgrecall-langlat-"))
    caches = {}
    for _, directory, _ in sides:
        caches.setdefault(str(directory), run_dir / f"models-{len(caches)}")
    # Fill each install's model cache (int8 conversion, optimized graph) outside the timed runs.
    for side in {str(s[1]): s for s in sides}.values():
        run_child(side, args, run_dir, caches, limit=5)
    results: dict[str, list[dict]] = {label: [] for label, _, _ in sides}
    for round_number in range(args.rounds):
        shift = round_number % len(sides)
        for side in sides[shift:] + sides[:shift]:
            result = run_child(side, args, run_dir, caches, args.limit)
            results[side[0]].append(result)
            print(f"round {round_number + 1} {side[0]}: {json.dumps(result)}", flush=True)
    shutil.rmtree(run_dir, ignore_errors=True)

    reference = sides[0][0]
    print(f"\n{args.rounds} rounds; medians over rounds; ratios are side / {reference}")
    # CPU seconds per chunk (this process and the server) move far less with the load than wall time.
    for runs in results.values():
        for r in runs:
            r["cpu_ms_per_chunk"] = (r["process_cpu_s"] + r["server_cpu_s"]) * 1000 / r["chunks"]
    keys = ("chunks_per_s", "cpu_ms_per_chunk", "hybrid_p50_ms", "keyword_p50_ms")
    print(
        "| side | chunks/s | CPU ms/chunk | hybrid p50 ms | keyword p50 ms "
        "| rate ratio | CPU ratio | hybrid ratio | keyword ratio |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for label, runs in results.items():
        row = [label]
        for key in keys:
            row.append(f"{statistics.median(r[key] for r in runs):.2f}")
        for key in keys:
            paired = [r[key] / ref[key] for r, ref in zip(runs, results[reference], strict=True)]
            of_medians = statistics.median(r[key] for r in runs) / statistics.median(r[key] for r in results[reference])
            row.append(f"{of_medians:.3f} (paired {statistics.median(paired):.3f})")
        print("| " + " | ".join(row) + " |")
    loads = [value for runs in results.values() for r in runs for value in r["load"]]
    print(
        f"load average (1 min) at the runs' starts and ends: {min(loads)}-{max(loads)}, median {statistics.median(loads)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
