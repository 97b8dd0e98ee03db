"""Indexing throughput against the raw model, and hybrid search latency, in one run.

    .venv/bin/python bench/index_bench.py [--corpus ../shared/data/scifact] [--limit N] [--queries 100]

Writes one Markdown note per corpus entry (title as heading) into a temporary
folder, indexes it through the real pipeline (queue, workers, chunking,
batched embedding, COPY) on a fresh embedded database, then embeds the very
same chunk texts with the model alone (batched, nothing else running). The
ratio of the two is what to compare between runs; absolute times vary.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from pgrecall.evaluate import percentile

DEFAULT_CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "scifact"


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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--limit", type=int, default=None, help="index only the first N entries")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="pgrecall-bench-"))
    os.environ["PGRECALL_HOME"] = str(work / "home")
    os.environ.pop("PGRECALL_DATABASE_URL", None)

    from pgrecall import database
    from pgrecall.api.search import Searcher
    from pgrecall.embedding import get_embedder
    from pgrecall.logs import configure_logging
    from pgrecall.migrate import migrate
    from pgrecall.settings import load_settings
    from pgrecall.worker.run import run_index

    configure_logging()
    settings = load_settings()
    notes = work / "notes"
    notes.mkdir()
    note_count = write_corpus(args.corpus, notes, args.limit)
    url = database.database_url(settings)
    with database.connect(url) as conn:
        migrate(conn)
    embedder = get_embedder(settings.model, settings.embed_batch_size)
    embedder.embed_batch(["warm up the model"])

    summary = asyncio.run(run_index(settings, url, [str(notes)]))
    pipeline_rate = summary.chunks / summary.seconds

    with database.connect(url) as conn:
        texts = [
            f"{heading}\n\n{text}" if heading else text
            for heading, text in conn.execute("SELECT heading, text FROM pgrecall.chunks ORDER BY id")
        ]
    started = time.perf_counter()
    embedder.embed_batch(texts)
    model_seconds = time.perf_counter() - started
    model_rate = len(texts) / model_seconds

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

    result = {
        "notes": note_count,
        "chunks": summary.chunks,
        "embedding_calls": summary.embed_calls,
        "pipeline_seconds": round(summary.seconds, 1),
        "pipeline_embedding_seconds": round(summary.embed_seconds, 1),
        "pipeline_chunks_per_s": round(pipeline_rate, 1),
        "model_seconds": round(model_seconds, 1),
        "model_chunks_per_s": round(model_rate, 1),
        "pipeline_to_model_ratio": round(pipeline_rate / model_rate, 3),
        "search_ms": {
            label: {"p50": round(statistics.median(values), 1), "p95": round(percentile(values, 95), 1)}
            for label, values in latencies.items()
        },
        "queries": len(queries),
    }
    if args.json:
        print(json.dumps(result))
    else:
        print(f"notes: {note_count}, chunks: {summary.chunks} ({summary.embed_calls} embedding calls)")
        print(f"raw model, batched:  {model_rate:8.1f} chunks/s  ({model_seconds:.1f} s)")
        print(
            f"pipeline (queue→db): {pipeline_rate:8.1f} chunks/s  ({summary.seconds:.1f} s, {summary.embed_seconds:.1f} s of it embedding)"
        )
        print(f"pipeline / model:    {pipeline_rate / model_rate:8.3f}")
        for label, values in result["search_ms"].items():
            print(
                f"search {label:<17} p50 {values['p50']:7.1f} ms   p95 {values['p95']:7.1f} ms   ({len(queries)} queries, k=10)"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
