"""Search latency at 100,000 chunks, built from real text.

    .venv/bin/python bench/scale_bench.py [--copies 4] [--queries 100]

Starts from the SciFact index that `pgrecall eval ../shared/data/scifact` built
(database pgrecall_eval_scifact, about 23,000 chunks), clones it, and adds
COPIES perturbed copies of every document through the real write path
(store.write_document: COPY, postings, BM25 statistics, HNSW): each copy
drops 15% of the words at random and swaps a few neighbours, and its vectors
are the original's plus Gaussian noise (sigma 0.02, renormalised), standing in
for the embedding of a near-duplicate without paying 90,000 model calls. Then
times keyword, vector and hybrid searches for the SciFact test queries, and
measures the HNSW arm's recall@10 against exact search at that size.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import random
import statistics
import sys
import time

import numpy as np
import psycopg
from psycopg import sql

from pgrecall.evaluate import ann_recall, percentile

SOURCE = "pgrecall_eval_scifact"
TARGET = "pgrecall_scale_bench"


def perturb(text: str, rng: random.Random) -> str:
    words = [w for w in text.split() if rng.random() > 0.15] or text.split()[:1]
    for _ in range(max(1, len(words) // 20)):
        i = rng.randrange(max(1, len(words) - 1))
        words[i : i + 2] = reversed(words[i : i + 2])
    return " ".join(words)


async def add_copies(url: str, copies: int, seed: int = 7) -> tuple[int, float]:
    from pgrecall.database import open_async_pool as open_pool
    from pgrecall.worker import store
    from pgrecall.worker.document import Chunk, ParsedDocument

    rng = random.Random(seed)
    noise = np.random.default_rng(seed)
    with psycopg.connect(url) as conn:
        from pgvector.psycopg import register_vector

        register_vector(conn)
        documents = conn.execute(
            "SELECT id, source_root, path, kind, title, chunking FROM pgrecall.documents WHERE chunk_count > 0 ORDER BY id"
        ).fetchall()
        chunks_of: dict[int, list[tuple]] = {}
        for document_id, ordinal, heading, text, tokens, embedding in conn.execute(
            "SELECT document_id, ordinal, heading, text, token_count, embedding FROM pgrecall.chunks ORDER BY document_id, ordinal"
        ):
            chunks_of.setdefault(document_id, []).append((ordinal, heading, text, tokens, embedding.to_numpy()))
    pool = await open_pool(url, max_size=4)
    written = 0
    started = time.perf_counter()

    async def write(copy: int, document) -> int:
        document_id, root, path, kind, title, chunking = document
        originals = chunks_of[document_id]
        chunks = [Chunk(o, h, perturb(t, rng), n) for o, h, t, n, _ in originals]
        vectors = np.stack([v for *_, v in originals]) + noise.normal(0, 0.02, (len(originals), 384))
        vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)
        parsed = ParsedDocument(
            path=f"copy{copy}/{path}", kind=kind, title=title or "", content_hash=f"copy{copy}", sections=[]
        )
        async with pool.connection() as conn:
            await store.write_document(
                conn, root=root, document=parsed, chunks=chunks, vectors=vectors, info=None, chunking=chunking
            )
        return len(chunks)

    try:
        for copy in range(1, copies + 1):
            for start in range(0, len(documents), 4):
                results = await asyncio.gather(*(write(copy, d) for d in documents[start : start + 4]))
                written += sum(results)
            print(f"copy {copy}: {written} chunks written", file=sys.stderr)
    finally:
        await pool.close()
    return written, time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--copies", type=int, default=4)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--dataset", default="../shared/data/scifact")
    parser.add_argument("--reuse", action="store_true", help="keep an existing scaled database")
    parser.add_argument("--ef-search", default="40,100,200,400", help="ef_search values to measure HNSW recall at")
    args = parser.parse_args()

    from pgrecall import database
    from pgrecall.api.search import Searcher
    from pgrecall.logs import configure_logging
    from pgrecall.settings import load_settings

    configure_logging()
    settings = load_settings()
    admin = database.database_url(settings)
    with psycopg.connect(admin, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (TARGET,)).fetchone()
        if not (args.reuse and exists):
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(TARGET)))
            conn.execute(
                sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(sql.Identifier(TARGET), sql.Identifier(SOURCE))
            )
            exists = None
    url = psycopg.conninfo.make_conninfo(admin, dbname=TARGET)
    written, seconds = (0, 0.0)
    if not exists:
        written, seconds = asyncio.run(add_copies(url, args.copies))
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("VACUUM ANALYZE")
    with psycopg.connect(url) as conn:
        total = conn.execute("SELECT count(*) FROM pgrecall.chunks").fetchone()[0]

    queries = []
    with open(f"{args.dataset}/queries.jsonl", encoding="utf-8") as lines:
        for line in lines:
            queries.append(json.loads(line)["text"])
    queries = queries[: args.queries]
    latencies: dict[str, list[float]] = {"keyword": [], "vector": [], "hybrid": [], "hybrid+enrich": []}
    with Searcher(url, settings, pool_size=1) as searcher:
        searcher.search("warm up", k=10)
        for query in queries:
            for label, kwargs in (
                ("keyword", {"mode": "keyword", "enrich_query": False}),
                ("vector", {"mode": "vector", "enrich_query": False}),
                ("hybrid", {"enrich_query": False}),
                ("hybrid+enrich", {"enrich_query": True}),
            ):
                started = time.perf_counter()
                searcher.search(query, k=10, **kwargs)
                latencies[label].append((time.perf_counter() - started) * 1000)
        recall = ann_recall(searcher, queries)
    sweep = {}
    for ef_search in [int(value) for value in args.ef_search.split(",") if value]:
        with Searcher(url, dataclasses.replace(settings, ef_search=ef_search), pool_size=1) as swept:
            vector_ms = []
            for query in queries:
                started = time.perf_counter()
                swept.search(query, k=10, mode="vector")
                vector_ms.append((time.perf_counter() - started) * 1000)
            sweep[ef_search] = {
                "ann_recall@10": ann_recall(swept, queries),
                "vector_k10_p50_ms": round(statistics.median(vector_ms), 1),
            }
    result = {
        "chunks": total,
        "ann_recall@10": recall,
        "ef_search": settings.ef_search,
        "ef_search_sweep": sweep,
        "copies_written_chunks": written,
        "write_path_chunks_per_s_without_model": round(written / seconds, 1) if seconds else None,
        "queries": len(queries),
        "ms": {
            k: {"p50": round(statistics.median(v), 1), "p95": round(percentile(v, 95), 1)} for k, v in latencies.items()
        },
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
