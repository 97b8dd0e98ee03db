"""pgrecall beside LanceDB, flat and with its HNSW index (HnswSq), on the same chunks, vectors and query embedder.

    PGRECALL_HOME=/tmp/speed/scifact nice -n 10 .venv/bin/python bench/peer_side_by_side.py \
        [--dataset /work/shared/data/scifact] [--rounds 2] [--queries 0] [--pool-size 4] [--json]

Needs `pip install lancedb` (not a dependency of pgrecall) and the index `pgrecall eval DATASET`
built (its own database), which is only read. Its chunks (id, document, text, the words the keyword
index counts, vector) are copied into two LanceDB tables in a temporary folder, each with LanceDB's
native full-text index (its defaults): one searched flat (exact, cosine), one with an HnswSq index
(HNSW over 8-bit scalar-quantised vectors, cosine; LanceDB's default parameters).

Per query, after one untimed warm-up round, every side in turn, the order rotated from query to
query so none always meets the caches another warmed; each side's time includes embedding the
query, by the Searcher's own embedder object:
  vector   Searcher.search(q, k=10, mode="vector")  | table.search(vector).limit(10), flat and HnswSq
  keyword  Searcher.search(q, k=10, mode="keyword") | table.search(q, "fts").limit(10)
  hybrid   Searcher.search(q, k=10)                 | LanceDB's hybrid query (RRFReranker), flat and HnswSq
Prints p50/p95 per side, the ratios pgrecall/LanceDB (p50), nDCG@10 on the qrels (a document ranked
by its best chunk, as `pgrecall eval` does), and ANN recall@10 against exact search: pgrecall's
through its own vector arm at the effort a search chooses (pgrecall.composition.evaluation.ann_recall), LanceDB
HnswSq's against the exact top 10 of the same vectors. Then where a pgrecall search's time goes
(--profile, on by default): a pass of its own in the same run, on a Searcher of one connection (the
arms in turn, so the stages add up), each stage timed around the ReadSession call that does it.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import dataclasses
import functools
import importlib.metadata
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

K = 10
SIDES = ("pg_vector", "lance_vector_flat", "lance_vector_hnsw", "pg_keyword", "lance_fts", "pg_hybrid",
         "lance_hybrid_flat", "lance_hybrid_hnsw")  # fmt: skip
RATIOS = {
    "vector vs LanceDB HnswSq": ("pg_vector", "lance_vector_hnsw"),
    "vector vs LanceDB flat": ("pg_vector", "lance_vector_flat"),
    "keyword vs LanceDB FTS": ("pg_keyword", "lance_fts"),
    "hybrid vs LanceDB HnswSq": ("pg_hybrid", "lance_hybrid_hnsw"),
    "hybrid vs LanceDB flat": ("pg_hybrid", "lance_hybrid_flat"),
}


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else float("nan")


def summary(ms: list[float]) -> dict[str, float]:
    return {"p50_ms": round(statistics.median(ms), 2), "p95_ms": round(percentile(ms, 95), 2)}


def read_chunks(url: str) -> dict[str, Any]:
    """The index's chunks as columns: ids, document paths, texts, the words the keyword index counts
    of each (Chunk.keyword_text, the heading where it changes), vectors; one read-only transaction."""
    from pgrecall.postgres import database
    from pgrecall.worker.document import Chunk

    with database.connect(url, read_only=True) as conn:
        rows = conn.execute(
            "SELECT c.id, c.document_id, c.ordinal, c.heading, c.text, c.fresh_from, d.path, c.embedding"
            " FROM pgrecall.chunks c JOIN pgrecall.documents d ON d.id = c.document_id"
            " ORDER BY c.document_id, c.ordinal"
        ).fetchall()
    keyword_texts, previous = [], None
    for _, document_id, ordinal, heading, text, fresh_from, _, _ in rows:
        chunk = Chunk(ordinal, heading, text, token_count=0, fresh_from=fresh_from or 0)
        keyword_texts.append(chunk.keyword_text(with_heading=previous != (document_id, heading)))
        previous = (document_id, heading)
    return {
        "id": [row[0] for row in rows],
        "path": [row[6] for row in rows],
        "text": [row[4] for row in rows],
        "keyword_text": keyword_texts,
        "vector": np.stack([row[7].to_numpy().astype(np.float32) for row in rows]) if rows else np.zeros((0, 0)),
    }


def lance_table(folder: str, name: str, chunks: dict[str, Any], vector_index: str | None):
    import lancedb
    import pyarrow as pa
    from lancedb import index

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
    lance = lancedb.connect(folder).create_table(name, table)
    lance.create_index("keyword_text", config=index.FTS())
    if vector_index:
        lance.create_index("vector", config=getattr(index, vector_index)(distance_type="cosine"))
    return lance


def exact_top(vectors: np.ndarray, ids: np.ndarray, query: np.ndarray, k: int = K) -> list[int]:
    distance = 1 - vectors @ query  # unit vectors
    order = np.lexsort((ids, distance))[:k]
    return [int(ids[i]) for i in order]


@contextlib.contextmanager
def stage_timers(embedder) -> Iterator[dict[str, float]]:
    """Wraps the ReadSession methods (and the embedder's embed_queries) a search calls with timers:
    yields a dict, stage -> milliseconds, that each call adds to (reset it per search)."""
    from pgrecall.api import read_queries as store

    spent: dict[str, float] = collections.defaultdict(float)
    stages = {
        "__init__": "session setup (HNSW settings)",
        "query_space": "query space (+ space size)",
        "selectivity": "filter estimate",
        "vector_arm": "vector arm SQL",
        "keyword_arm": "keyword arm (SQL + ranking)",
        "index_languages": "index languages",
        "languages": "candidate languages",
        "facts": "candidate facts",
        "fetch": "fetch hits",
        "passage_chunks": "passage chunks",
    }
    originals = {name: getattr(store.ReadSession, name) for name in stages if hasattr(store.ReadSession, name)}

    def wrap(function: Callable, label: str) -> Callable:
        @functools.wraps(function)
        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                spent[label] += (time.perf_counter() - started) * 1000

        return timed

    embed = embedder.embed_queries
    try:
        for name, function in originals.items():
            setattr(store.ReadSession, name, wrap(function, stages[name]))
        embedder.embed_queries = wrap(embed, "query embedding")
        yield spent
    finally:
        for name, function in originals.items():
            setattr(store.ReadSession, name, function)
        embedder.embed_queries = embed


def profile(url: str, settings, embedder, queries: list[str]) -> dict[str, Any]:
    """Per stage of a hybrid and a vector search (one connection, arms in turn): p50 and mean ms, and
    the rest (fusion, passages, Python) as the total less the stages."""
    from pgrecall.api.searcher import Searcher

    out: dict[str, Any] = {}
    with Searcher(url, settings, embedder=embedder, pool_size=1) as searcher:
        for mode in ("hybrid", "vector"):
            per_stage: dict[str, list[float]] = collections.defaultdict(list)
            for query in queries:  # warm
                searcher.search(query, k=K, mode=mode)
            with stage_timers(searcher.embedder) as spent:
                for query in queries:
                    spent.clear()
                    started = time.perf_counter()
                    searcher.search(query, k=K, mode=mode)
                    total = (time.perf_counter() - started) * 1000
                    for label, ms in spent.items():
                        per_stage[label].append(ms)
                    per_stage["total"].append(total)
                    per_stage["rest (fusion, passages, Python)"].append(total - sum(spent.values()))
            out[mode] = {
                label: {"p50_ms": round(statistics.median(ms), 2), "mean_ms": round(statistics.fmean(ms), 2)}
                for label, ms in per_stage.items()
            }
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="/work/shared/data/scifact")
    parser.add_argument("--split", default="test")
    parser.add_argument("--rounds", type=int, default=2, help="timed rounds over every query, after one warm-up")
    parser.add_argument("--queries", type=int, default=0, help="only the first N queries (a quick check)")
    parser.add_argument("--pool-size", type=int, default=4, help="the Searcher's connections (4: arms side by side)")
    parser.add_argument("--no-profile", dest="profile", action="store_false")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    os.environ.setdefault("LANCE_LOG", "error")
    os.environ.setdefault("LANCEDB_LOG", "error")
    import lancedb
    import psycopg
    from lancedb.rerankers import RRFReranker

    from pgrecall.api.searcher import Searcher
    from pgrecall.composition.evaluation import (
        ann_recall,
        document_run,
        eval_database_name,
        ir_metrics,
        load_dataset,
        safe_name,
    )
    from pgrecall.logs import configure_logging
    from pgrecall.postgres import database
    from pgrecall.settings import load_settings

    configure_logging()
    settings = load_settings()
    dataset = load_dataset(Path(args.dataset), args.split)
    if args.queries:
        kept = dict(list(dataset.queries.items())[: args.queries])
        dataset = dataclasses.replace(dataset, queries=kept, qrels={q: dataset.qrels[q] for q in kept})
    url = psycopg.conninfo.make_conninfo(database.database_url(settings), dbname=eval_database_name(dataset.name))
    chunks = read_chunks(url)
    if not chunks["id"]:
        print(f"no index for {dataset.name}: run `pgrecall eval {args.dataset}` first", file=sys.stderr)
        return 1
    mapping: dict[str, str] = {}
    with open(dataset.corpus, encoding="utf-8") as lines:
        for line in lines:
            corpus_id = str(json.loads(line)["_id"])
            mapping[f"{safe_name(corpus_id)}.md"] = corpus_id
    columns = ["id", "document", "text"]
    reranker = RRFReranker()
    timings: dict[str, list[float]] = {name: [] for name in SIDES}
    runs: dict[str, dict[str, dict[str, float]]] = {name: {} for name in SIDES}
    lance_hnsw_ids: dict[str, list[int]] = {}
    load_before = os.getloadavg()

    with (
        tempfile.TemporaryDirectory(prefix="lance-") as folder,
        Searcher(url, settings, pool_size=args.pool_size) as searcher,
    ):
        started = time.perf_counter()
        flat = lance_table(folder, "flat", chunks, None)
        hnsw = lance_table(folder, "hnsw", chunks, "HnswSq")
        build_s = time.perf_counter() - started
        embedder = searcher.embedder

        def lance_vector(table):
            return lambda q: (
                table.search(embedder.embed_queries([q])[0]).distance_type("cosine").select(columns).limit(K).to_list()
            )

        def lance_hybrid(table):
            return lambda q: (
                table.search(query_type="hybrid")
                .vector(embedder.embed_queries([q])[0])
                .text(q)
                .distance_type("cosine")
                .rerank(reranker)
                .select(columns)
                .limit(K)
                .to_list()
            )

        calls: dict[str, Callable[[str], Any]] = {
            "pg_vector": lambda q: searcher.search(q, k=K, mode="vector"),
            "lance_vector_flat": lance_vector(flat),
            "lance_vector_hnsw": lance_vector(hnsw),
            "pg_keyword": lambda q: searcher.search(q, k=K, mode="keyword"),
            "lance_fts": lambda q: flat.search(q, query_type="fts").select(columns).limit(K).to_list(),
            "pg_hybrid": lambda q: searcher.search(q, k=K),
            "lance_hybrid_flat": lance_hybrid(flat),
            "lance_hybrid_hnsw": lance_hybrid(hnsw),
        }
        embed_ms: list[float] = []
        for round_ in range(args.rounds + 1):
            for number, (query_id, query) in enumerate(dataset.queries.items()):
                shift = (number + round_) % len(SIDES)
                started = time.perf_counter()
                embedder.embed_queries([query])
                if round_:
                    embed_ms.append((time.perf_counter() - started) * 1000)
                for name in SIDES[shift:] + SIDES[:shift]:
                    started = time.perf_counter()
                    found = calls[name](query)
                    elapsed = (time.perf_counter() - started) * 1000
                    if round_:
                        timings[name].append(elapsed)
                        continue
                    hits = found if name.startswith("pg") else [SimpleNamespace(path=r["document"]) for r in found]
                    runs[name][query_id] = document_run(hits, mapping, depth=K)
                    if name == "lance_vector_hnsw":
                        lance_hnsw_ids[query_id] = [r["id"] for r in found]
        load_after = os.getloadavg()
        texts = list(dataset.queries.values())
        pg_recall = ann_recall(searcher, texts)
        ids = np.asarray(chunks["id"])
        query_vectors = embedder.embed_queries(texts)
        lance_recall = statistics.fmean(
            len(set(lance_hnsw_ids[query_id]) & set(exact_top(chunks["vector"], ids, vector))) / K
            for query_id, vector in zip(dataset.queries, query_vectors, strict=True)
        )
        effort = chosen_effort(searcher)
        stages = profile(url, settings, embedder, texts) if args.profile else None

    result: dict[str, Any] = {
        "dataset": dataset.name,
        "queries": len(dataset.queries),
        "chunks": len(chunks["id"]),
        "rounds": args.rounds,
        "pool_size": args.pool_size,
        "pgrecall": importlib.metadata.version("pgrecall"),
        "pgrecall_source": str(Path(sys.modules["pgrecall"].__file__).parent),
        "ef_search_setting": settings.ef_search,
        "vector_effort": effort,
        "lancedb": lancedb.__version__,
        "lance_build_s": round(build_s, 1),
        "embedding": embedder.space,
        "fusion": {"pgrecall": settings.fusion, "lancedb": "RRFReranker(K=60)"},
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in load_after],
        "query_embedding": summary(embed_ms),
        "ann_recall@10": {"pgrecall": pg_recall, "lancedb_hnsw": round(lance_recall, 4)},
        "sides": {},
        "ratios_p50": {},
        "stages": stages,
    }
    for name, ms in timings.items():
        metrics = ir_metrics(dataset.qrels, runs[name])
        result["sides"][name] = {**summary(ms), "ndcg@10": metrics["ndcg@10"], "recall@10": metrics["recall@10"]}
    for label, (ours, theirs) in RATIOS.items():
        result["ratios_p50"][label] = round(result["sides"][ours]["p50_ms"] / result["sides"][theirs]["p50_ms"], 3)
    print(json.dumps(result, indent=1) if args.json else format_report(result))
    return 0


def chosen_effort(searcher) -> str:
    """The vector arm's effort a search without filters chooses on this index (or the setting's)."""
    from pgrecall.api import read_queries as store

    with searcher.pool.connection() as conn, conn.transaction():
        session = store.ReadSession(conn, None, ef_search=searcher.settings.ef_search)
        space = session.query_space(searcher.embedder.space)
        if space is None or not hasattr(session, "effort"):
            return f"ef_search {searcher.settings.ef_search} (fixed)"
        effort = session.effort(space, 100)
        rows = f"{space.rows:,.0f}" if space.rows is not None else "unknown"
        return f"{'exact' if effort.exact else f'ef_search {effort.ef_search}'} ({rows} rows)"


def format_report(result: dict[str, Any]) -> str:
    lines = [
        f"{result['dataset']}: {result['queries']} queries x {result['rounds']} rounds, {result['chunks']} chunks, "
        f"pgrecall {result['pgrecall']} ({result['pgrecall_source']}, pool {result['pool_size']}, vector arm: "
        f"{result['vector_effort']}), lancedb {result['lancedb']}",
        "| side | p50 ms | p95 ms | nDCG@10 | recall@10 |",
        "|---|---|---|---|---|",
    ]
    for name, side in result["sides"].items():
        lines.append(f"| {name} | {side['p50_ms']} | {side['p95_ms']} | {side['ndcg@10']} | {side['recall@10']} |")
    lines.append("")
    for label, ratio in result["ratios_p50"].items():
        lines.append(f"p50 ratio pgrecall/LanceDB, {label}: {ratio}x")
    recall = result["ann_recall@10"]
    lines.append(f"ANN recall@10 against exact: pgrecall {recall['pgrecall']}, LanceDB HnswSq {recall['lancedb_hnsw']}")
    lines.append(f"query embedding alone (inside every side): p50 {result['query_embedding']['p50_ms']} ms")
    lines.append(f"load average before {result['load_average_before']}, after {result['load_average_after']}")
    for mode, stages in (result["stages"] or {}).items():
        lines.append(f"where a {mode} search's time goes (one connection, arms in turn): p50 / mean ms")
        for label, ms in stages.items():
            lines.append(f"  {label}: {ms['p50_ms']} / {ms['mean_ms']}")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
