"""pgrecall's keyword and hybrid searches against LanceDB's on the same chunks, side by side.

    PGRECALL_HOME=/tmp/web3-home nice -n 19 .venv/bin/python bench/keyword_vs_lancedb.py \
        [--dataset ../shared/data/scifact] [--rounds 3] [--json]

Needs `pip install lancedb` (not a dependency of pgrecall) and the index `pgrecall eval DATASET`
built (its own database), which is only read: the chunks (id, document, heading, text, vector)
are copied from it into a LanceDB table in a temporary folder, with LanceDB's native full-text
index (English stemming and stop words, its defaults) on the very words pgrecall's keyword index
counts (Chunk.keyword_text: no overlap, the heading on a section's first chunk) and flat, exact
vector search (cosine), or with --lance-vector-index one of its vector indexes (HnswSq: HNSW over
8-bit scalar-quantised vectors, the nearest to pgrecall's HNSW), with its default parameters.

Per query, alternating which side goes first, after one untimed warm-up round:
  keyword: Searcher.search(query, k=10, mode="keyword") against table.search(query, "fts").limit(10)
  hybrid:  Searcher.search(query, k=10) (PGRECALL_FUSION, convex by default) against LanceDB's
           hybrid query (its RRFReranker), limit 10; the query embedding is inside both timings,
           by the Searcher's own embedder object.
Both sides return their hits with text (LanceDB: id, document, text, .to_list()). Prints p50/p95 of
each, the ratios pgrecall/LanceDB, nDCG@10 and recall@10 of each on the qrels (ir-measures, a
document ranked by its best chunk as `pgrecall eval` does; a side whose 10 chunks hold fewer
than 10 documents ranks fewer), and the load average before and after.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from pgrecall.composition.evaluation import (
    _safe_name,
    document_run,
    eval_database_name,
    ir_metrics,
    load_dataset,
    percentile,
)

K = 10


def keyword_texts(rows: list[tuple[int, int, int, str, str, int | None]]) -> list[str]:
    """What pgrecall's keyword index counts of each chunk: Chunk.keyword_text, with the heading
    where it differs from the previous chunk's of the document (worker.store._rows_to_write), for
    rows (id, document id, ordinal, heading, text, fresh_from) ordered by document and ordinal."""
    from pgrecall.worker.document import Chunk

    texts = []
    previous: tuple[int, str] | None = None
    for _, document_id, ordinal, heading, text, fresh_from in rows:
        chunk = Chunk(ordinal, heading, text, token_count=0, fresh_from=fresh_from or 0)  # NULL: before 0022
        texts.append(chunk.keyword_text(with_heading=previous != (document_id, heading)))
        previous = (document_id, heading)
    return texts


def read_chunks(url: str) -> dict[str, Any]:
    """The index's chunks as columns, read in one read-only transaction."""
    from pgrecall.postgres import database

    with database.connect(url, read_only=True) as conn:
        rows = conn.execute(
            "SELECT c.id, c.document_id, c.ordinal, c.heading, c.text, c.fresh_from, d.path, c.embedding"
            " FROM pgrecall.chunks c JOIN pgrecall.documents d ON d.id = c.document_id"
            " ORDER BY c.document_id, c.ordinal"
        ).fetchall()
    return {
        "id": [row[0] for row in rows],
        "path": [row[6] for row in rows],
        "text": [row[4] for row in rows],
        "keyword_text": keyword_texts([row[:6] for row in rows]),
        "vector": np.stack([row[7].to_numpy().astype(np.float32) for row in rows]),
    }


def build_table(folder: str, chunks: dict[str, Any], vector_index: str):
    import lancedb
    import pyarrow as pa

    vectors = chunks["vector"]
    table = pa.table(
        {
            "id": pa.array(chunks["id"], pa.int64()),
            "document": pa.array(chunks["path"], pa.string()),
            "text": pa.array(chunks["text"], pa.string()),
            "keyword_text": pa.array(chunks["keyword_text"], pa.string()),
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel(), pa.float32()), vectors.shape[1]),
        }
    )
    from lancedb import index

    lance = lancedb.connect(folder).create_table("chunks", table)
    lance.create_index("keyword_text", config=index.FTS())  # native FTS, its defaults
    if vector_index != "none":
        lance.create_index("vector", config=getattr(index, vector_index)(distance_type="cosine"))
    return lance


def timed(call: Callable[..., Any], *args: Any) -> tuple[float, Any]:
    started = time.perf_counter()
    result = call(*args)
    return (time.perf_counter() - started) * 1000, result


def summary(ms: list[float]) -> dict[str, float]:
    return {"p50_ms": round(statistics.median(ms), 2), "p95_ms": round(percentile(ms, 95), 2)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="../shared/data/scifact")
    parser.add_argument("--split", default="test")
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds over every query, after one warm-up")
    parser.add_argument(
        "--lance-vector-index",
        default="none",
        choices=["none", "HnswSq", "IvfHnswSq", "IvfPq"],
        help="LanceDB's vector index, with its defaults (none: flat, exact search)",
    )
    parser.add_argument("--queries", type=int, default=0, help="only the first N queries (a quick check)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    # LanceDB's Rust side warns on every query that selects columns without its scores.
    os.environ.setdefault("LANCE_LOG", "error")
    os.environ.setdefault("LANCEDB_LOG", "error")
    import lancedb
    import psycopg
    from lancedb.rerankers import RRFReranker

    from pgrecall.api.searcher import Searcher
    from pgrecall.logs import configure_logging
    from pgrecall.postgres import database
    from pgrecall.settings import load_settings

    configure_logging()  # warnings only, on stderr: stdout is the result
    settings = load_settings()
    dataset = load_dataset(Path(args.dataset), args.split)
    if args.queries:
        kept = dict(list(dataset.queries.items())[: args.queries])
        dataset = dataclasses.replace(dataset, queries=kept, qrels={q: dataset.qrels[q] for q in kept})
    # Not evaluate.eval_database_url: that one creates and migrates; this bench only reads.
    url = psycopg.conninfo.make_conninfo(database.database_url(settings), dbname=eval_database_name(dataset.name))
    load_before = os.getloadavg()
    chunks = read_chunks(url)
    if not chunks["id"]:
        print(f"no index for {dataset.name}: run `pgrecall eval {args.dataset}` first", file=sys.stderr)
        return 1
    mapping: dict[str, str] = {}
    with open(dataset.corpus, encoding="utf-8") as lines:
        for line in lines:
            corpus_id = str(json.loads(line)["_id"])
            mapping[f"{_safe_name(corpus_id)}.md"] = corpus_id
    columns = ["id", "document", "text"]
    reranker = RRFReranker()
    timings: dict[str, list[float]] = {name: [] for name in ("pg_keyword", "lance_fts", "pg_hybrid", "lance_hybrid")}
    runs: dict[str, dict[str, dict[str, float]]] = {name: {} for name in timings}

    with tempfile.TemporaryDirectory(prefix="lance-") as folder, Searcher(url, settings, pool_size=1) as searcher:
        started = time.perf_counter()
        table = build_table(folder, chunks, args.lance_vector_index)
        build_s = time.perf_counter() - started
        embedder = searcher.embedder

        def lance_fts(query: str):
            return table.search(query, query_type="fts").select(columns).limit(K).to_list()

        def lance_hybrid(query: str):
            vector = embedder.embed_queries([query])[0]
            return (
                table.search(query_type="hybrid")
                .vector(vector)
                .text(query)
                .distance_type("cosine")
                .rerank(reranker)
                .select(columns)
                .limit(K)
                .to_list()
            )

        pairs = {
            "keyword": (
                ("pg_keyword", lambda q: searcher.search(q, k=K, mode="keyword")),
                ("lance_fts", lance_fts),
            ),
            "hybrid": (("pg_hybrid", lambda q: searcher.search(q, k=K)), ("lance_hybrid", lance_hybrid)),
        }
        embed_ms: list[float] = []
        for round_ in range(args.rounds + 1):
            for number, (query_id, query) in enumerate(dataset.queries.items()):
                elapsed, _ = timed(embedder.embed_queries, [query])
                if round_:
                    embed_ms.append(elapsed)  # inside both hybrids: the part they share
                for pair in pairs.values():
                    # Alternate who goes first, so neither always meets the caches the other warmed.
                    for name, call in pair if (number + round_) % 2 == 0 else reversed(pair):
                        elapsed, found = timed(call, query)
                        if round_:
                            timings[name].append(elapsed)
                        else:
                            hits = (
                                found if name.startswith("pg") else [SimpleNamespace(path=r["document"]) for r in found]
                            )
                            runs[name][query_id] = document_run(hits, mapping, depth=K)
    load_after = os.getloadavg()

    import importlib.metadata

    result: dict[str, Any] = {
        "dataset": dataset.name,
        "queries": len(dataset.queries),
        "chunks": len(chunks["id"]),
        "rounds": args.rounds,
        "lancedb": lancedb.__version__,
        "pyarrow": importlib.metadata.version("pyarrow"),
        "lance_build_s": round(build_s, 1),
        "lance_vectors": "flat (exact, cosine)" if args.lance_vector_index == "none" else args.lance_vector_index,
        "pgrecall_vectors": "HNSW",
        "fusion": {"pgrecall": settings.fusion, "lancedb": "RRFReranker(K=60)"},
        "embedding": embedder.space,
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in load_after],
        "query_embedding": summary(embed_ms),
        "sides": {},
    }
    for name, ms in timings.items():
        metrics = ir_metrics(dataset.qrels, runs[name])
        result["sides"][name] = {**summary(ms), "ndcg@10": metrics["ndcg@10"], "recall@10": metrics["recall@10"]}
    sides = result["sides"]
    for label, (ours, theirs) in {
        "keyword": ("pg_keyword", "lance_fts"),
        "hybrid": ("pg_hybrid", "lance_hybrid"),
    }.items():
        result[f"{label}_p50_ratio"] = round(sides[ours]["p50_ms"] / sides[theirs]["p50_ms"], 3)
        result[f"{label}_p95_ratio"] = round(sides[ours]["p95_ms"] / sides[theirs]["p95_ms"], 3)
    if args.json:
        print(json.dumps(result, indent=1))
        return 0
    print(
        f"{result['dataset']}: {result['queries']} queries x {args.rounds} rounds, {result['chunks']} chunks; "
        f"lancedb {result['lancedb']} (table + FTS index built in {result['lance_build_s']} s)"
    )
    for name, side in sides.items():
        print(
            f"{name:>13}: p50 {side['p50_ms']} ms, p95 {side['p95_ms']} ms, "
            f"nDCG@10 {side['ndcg@10']}, recall@10 {side['recall@10']}"
        )
    for label in ("keyword", "hybrid"):
        print(f"{label} ratio pgrecall/lancedb: p50 {result[f'{label}_p50_ratio']}, p95 {result[f'{label}_p95_ratio']}")
    print(f"query embedding alone (inside both hybrids): p50 {result['query_embedding']['p50_ms']} ms")
    print(f"load average before {result['load_average_before']}, after {result['load_average_after']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
