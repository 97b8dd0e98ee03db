"""Indexing throughput against the raw model, and hybrid search latency, in one run.

    .venv/bin/python bench/index_bench.py [--corpus ../shared/data/scifact] [--limit N]
        [--queries 100] [--backend torch|onnx|onnx-int8] [--compare-torch]

Writes one Markdown note per corpus entry (title as heading) into a temporary
folder, indexes it through the real pipeline (queue, workers, chunking,
batched embedding, COPY) on a fresh embedded database, then embeds the very
same chunk texts with the model alone (batched, nothing else running), with
the same backend. The ratio of the two is what to compare between runs;
absolute times vary. `--compare-torch` also indexes a copy of the notes
through the torch pipeline in the same run and prints the ratio of the two
pipelines' rates.

Where the pipeline's time goes: the model's busy share of the pipeline's wall
time, the model's own rate inside the pipeline (chunks / busy seconds: below
the raw rate when the forward passes are slowed by other work on the same
cores), and the CPU seconds of this process and of the PostgreSQL server.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from harness.timing import percentile

DEFAULT_CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "scifact"
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def write_corpus(corpus: Path, folder: Path, limit: int | None) -> int:
    count = 0
    with open(corpus / "corpus.jsonl", encoding="utf-8") as lines:
        for line in lines:
            if limit is not None and count >= limit:
                break
            entry = json.loads(line)
            title = " ".join(entry.get("title", "").split()) or entry["_id"]
            (folder / f"{entry['_id']}.md").write_text(f"# {title}\n\n{entry['text']}\n", encoding="utf-8")
            count += 1
    return count


def server_cpu_seconds(pgdata: Path) -> float:
    """CPU seconds of the embedded server: the postmaster, its live backends and the exited ones."""
    try:
        postmaster = int((pgdata / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 0.0
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid, parent = int(entry.name), int(fields[1])
        if pid == postmaster:
            total += sum(int(f) for f in fields[11:15])  # utime stime cutime cstime
        elif parent == postmaster:
            total += int(fields[11]) + int(fields[12])
    return total / CLOCK_TICKS


def measure_pipeline(settings, url: str, folder: Path, pgdata: Path) -> dict:
    from pgrecall.worker.run import run_index

    cpu_before, server_before = time.process_time(), server_cpu_seconds(pgdata)
    summary = asyncio.run(run_index(settings, url, [str(folder)]))
    cpu, server = time.process_time() - cpu_before, server_cpu_seconds(pgdata) - server_before
    if summary.failures or summary.unaccounted:
        raise SystemExit(f"the pipeline failed files: {summary.failures[:3]} {summary.unaccounted[:3]}")
    return {
        "backend": settings.embed_backend,
        "chunks": summary.chunks,
        "embedding_calls": summary.embed_calls,
        "seconds": round(summary.seconds, 2),
        "embedding_seconds": round(summary.embed_seconds, 2),
        "chunks_per_s": round(summary.chunks / summary.seconds, 1),
        "model_busy_share": round(summary.embed_seconds / summary.seconds, 3),
        "chunks_per_busy_s": round(summary.chunks / summary.embed_seconds, 1) if summary.embed_seconds else None,
        "process_cpu_s": round(cpu, 1),
        "server_cpu_s": round(server, 1),
    }


def measure_model(embedder, texts: list[str]) -> dict:
    started = time.perf_counter()
    embedder.embed_batch(texts)
    seconds = time.perf_counter() - started
    return {"seconds": round(seconds, 2), "chunks_per_s": round(len(texts) / seconds, 1)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--limit", type=int, default=None, help="index only the first N entries")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument(
        "--backend", choices=("torch", "onnx", "onnx-int8"), default=None, help="default: PGRECALL_EMBED_BACKEND"
    )
    parser.add_argument(
        "--compare-torch", action="store_true", help="also index the notes through the torch pipeline, in this run"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="pgrecall-bench-"))
    os.environ["PGRECALL_HOME"] = str(work / "home")
    os.environ.pop("PGRECALL_DATABASE_URL", None)
    if args.backend:
        os.environ["PGRECALL_EMBED_BACKEND"] = args.backend

    from pgrecall.api.searcher import Searcher
    from pgrecall.embedders.embedding import embedder_for
    from pgrecall.logs import configure_logging
    from pgrecall.postgres import database
    from pgrecall.postgres.migrator import migrate
    from pgrecall.settings import load_settings

    configure_logging()
    settings = load_settings()
    notes = work / "notes"
    notes.mkdir()
    note_count = write_corpus(args.corpus, notes, args.limit)
    url = database.database_url(settings)
    pgdata = database.pgdata_path(settings)
    with database.connect(url) as conn:
        migrate(conn)
    embedder = embedder_for(settings)
    embedder.load().embed_batch(["warm up the model"])

    pipeline = measure_pipeline(settings, url, notes, pgdata)
    with database.connect(url) as conn:
        texts = [
            f"{heading}\n\n{text}" if heading else text
            for heading, text in conn.execute("SELECT heading, text FROM pgrecall.chunks ORDER BY id")
        ]
    model = measure_model(embedder, texts)
    result = {
        "notes": note_count,
        "backend": embedder.backend,
        "pipeline": pipeline,
        "model": model,
        "pipeline_to_model_ratio": round(pipeline["chunks_per_s"] / model["chunks_per_s"], 3),
    }

    if args.compare_torch and embedder.backend != "torch":
        import dataclasses

        torch_settings = dataclasses.replace(settings, embed_backend="torch")
        torch_embedder = embedder_for(torch_settings)
        torch_embedder.load().embed_batch(["warm up the model"])
        torch_notes = work / "notes-torch"  # another root: a fresh insert of every note, as above
        shutil.copytree(notes, torch_notes)
        torch_pipeline = measure_pipeline(torch_settings, url, torch_notes, pgdata)
        result["torch_pipeline"] = torch_pipeline
        result["pipeline_to_torch_pipeline_ratio"] = round(pipeline["chunks_per_s"] / torch_pipeline["chunks_per_s"], 3)

    queries = []
    with open(args.corpus / "queries.jsonl", encoding="utf-8") as lines:
        for line in lines:
            queries.append(json.loads(line)["text"])
            if len(queries) >= args.queries:
                break
    latencies: dict[str, list[float]] = {"hybrid": [], "hybrid+enrich": [], "vector": [], "keyword": []}
    with Searcher(url, settings, embedder=embedder, pool_size=1) as searcher:
        searcher.search(queries[0], k=10)  # warm the pool and caches
        for query in queries:
            for label, kwargs in (
                ("hybrid", {}),
                ("hybrid+enrich", {"enrich_query": True}),
                ("vector", {"mode": "vector", "enrich_query": False}),
                ("keyword", {"mode": "keyword", "enrich_query": False}),
            ):
                started = time.perf_counter()
                searcher.search(query, k=10, **kwargs)
                latencies[label].append((time.perf_counter() - started) * 1000)
    database.stop_embedded(settings)
    result["search_ms"] = {
        label: {"p50": round(statistics.median(values), 1), "p95": round(percentile(values, 95), 1)}
        for label, values in latencies.items()
    }
    result["queries"] = len(queries)

    if args.json:
        print(json.dumps(result))
        return 0
    print(f"backend: {embedder.backend}; notes: {note_count}, chunks: {pipeline['chunks']}")
    print(f"raw model, batched:  {model['chunks_per_s']:8.1f} chunks/s  ({model['seconds']:.1f} s)")
    _print_pipeline(pipeline)
    print(f"pipeline / model:    {result['pipeline_to_model_ratio']:8.3f}")
    if "torch_pipeline" in result:
        _print_pipeline(result["torch_pipeline"])
        print(f"{embedder.backend} pipeline / torch pipeline: {result['pipeline_to_torch_pipeline_ratio']:6.3f}")
    for label, values in result["search_ms"].items():
        print(
            f"search {label:<17} p50 {values['p50']:7.1f} ms   p95 {values['p95']:7.1f} ms   ({len(queries)} queries, k=10)"
        )
    return 0


def _print_pipeline(p: dict) -> None:
    print(
        f"pipeline (queue→db): {p['chunks_per_s']:8.1f} chunks/s  ({p['seconds']:.1f} s, {p['backend']}, "
        f"{p['embedding_calls']} embedding calls)"
    )
    print(
        f"  model busy {p['model_busy_share']:.0%} of it ({p['embedding_seconds']:.1f} s, "
        f"{p['chunks_per_busy_s']} chunks per busy s); CPU: this process {p['process_cpu_s']} s, "
        f"PostgreSQL {p['server_cpu_s']} s"
    )


if __name__ == "__main__":
    sys.exit(main())
