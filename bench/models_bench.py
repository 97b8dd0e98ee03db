"""A second model of another width indexed beside the bundled one: each space's vector search.

    .venv/bin/python bench/models_bench.py [--limit 1000] [--queries 100] [--hidden 768] [--json]

In a fresh home (its own embedded server), the first --limit SciFact abstracts are written as
notes twice: one folder is indexed with the bundled all-MiniLM-L6-v2 (PGRECALL_EMBED_BACKEND,
384 dimensions), the other with a randomly initialised BERT of --hidden dimensions built here
and saved as a sentence-transformers folder with e5's prompts (no model can be downloaded;
its rankings mean nothing, its costs are those of any model of that width). Then, with both
spaces in the index, per space: the plan the planner picks for the vector arm on its own (no
setting changed), the vector arm's SQL p50/p95 over --queries SciFact test queries, its HNSW
recall@10 against exact search in its space, and end-to-end vector searches; and what
`pgrecall models` prints.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def percentiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {"p50": round(statistics.median(ordered), 2), "p95": round(ordered[int(0.95 * (len(ordered) - 1))], 2)}


def write_notes(folder: Path, abstracts: list[dict]) -> None:
    folder.mkdir(parents=True)
    for abstract in abstracts:
        (folder / f"{abstract['_id']}.md").write_text(f"# {abstract['title']}\n\n{abstract['text']}\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=1000, help="SciFact abstracts per folder")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--hidden", type=int, default=768, help="the second model's width")
    parser.add_argument("--dataset", default=str(ROOT.parent / "shared" / "data" / "scifact"))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    home = Path(tempfile.mkdtemp(prefix="pgrecall-models-bench-"))
    os.environ["PGRECALL_HOME"] = str(home)
    os.environ.pop("PGRECALL_DATABASE_URL", None)
    import psycopg

    from pgrecall.api import read_queries as store
    from pgrecall.api.searcher import Searcher
    from pgrecall.cli.model_commands import run_models
    from pgrecall.contract import FILTER_FIELDS
    from pgrecall.embedders.embedding import embedder_for
    from pgrecall.postgres import database
    from pgrecall.postgres.migrator import migrated_url
    from pgrecall.settings import load_settings
    from pgrecall.worker.run import run_index
    from tests.support.tiny_model import build_tiny_model

    with open(f"{args.dataset}/corpus.jsonl", encoding="utf-8") as lines:
        abstracts = [json.loads(line) for _, line in zip(range(args.limit), lines, strict=False)]
    with open(f"{args.dataset}/queries.jsonl", encoding="utf-8") as lines:
        queries = [json.loads(line)["text"] for line in lines][: args.queries]
    write_notes(home / "bundled", abstracts)
    write_notes(home / "second", abstracts)
    model = build_tiny_model(home / f"random-bert-{args.hidden}", hidden=args.hidden)

    settings = load_settings()
    second_settings = dataclasses.replace(settings, model=str(model), embed_backend="onnx")
    result: dict = {"abstracts": len(abstracts), "queries": len(queries), "spaces": {}}
    try:
        url = migrated_url(settings)
        for label, these in (("bundled", settings), ("second", second_settings)):
            started = time.perf_counter()
            summary = asyncio.run(run_index(these, url, [str(home / label)]))
            result[f"index_{label}_s"] = round(time.perf_counter() - started, 1)
            result[f"index_{label}_files"] = summary.statuses.get("indexed")
        for these in (settings, second_settings):
            embedder = embedder_for(these)
            vectors = embedder.embed_queries(queries)
            with Searcher(url, these, embedder=embedder, pool_size=1) as searcher:
                with searcher.pool.connection() as conn, conn.transaction():
                    session = store.ReadSession(conn, None, ef_search=these.ef_search and max(these.ef_search, 100))
                    space = session.query_space(embedder.space)
                    query = store.vector_arm_query("vector_arm", False, space.id, space.dimensions)
                    params = {**dict.fromkeys(FILTER_FIELDS), "embedding": vectors[0], "limit": 100}
                    plan = [row[0] for row in conn.execute(psycopg.sql.SQL("EXPLAIN ") + query, params)]
                    chunks = conn.execute(
                        "SELECT count(*) FROM pgrecall.chunks WHERE embedding_space_id = %s", (space.id,)
                    ).fetchone()[0]
                    sql_ms, overlaps = [], []
                    for vector in vectors:
                        started = time.perf_counter()
                        found = session.vector_arm(vector, 100, space=space)
                        sql_ms.append((time.perf_counter() - started) * 1000)
                        exact = session.vector_arm(vector, 10, exact=True, space=space)
                        overlaps.append(len({h.chunk_id for h in found[:10]} & {h.chunk_id for h in exact}) / 10)
                search_ms = []
                for text in queries:
                    started = time.perf_counter()
                    searcher.search(text, k=10, mode="vector")
                    search_ms.append((time.perf_counter() - started) * 1000)
            result["spaces"][embedder.space] = {
                "dimensions": space.dimensions,
                "chunks": chunks,
                "plan": plan,
                "vector_arm_sql_ms": percentiles(sql_ms),
                "vector_search_ms (query embedding included)": percentiles(search_ms),
                "hnsw_recall@10": round(statistics.fmean(overlaps), 3),
            }
        print(json.dumps(result, indent=None if args.json else 1))
        if not args.json:
            os.environ["PGRECALL_DATABASE_URL"] = url
            run_models(argparse.Namespace(json=False), load_settings())
    finally:
        database.stop_embedded(settings)
    return 0


if __name__ == "__main__":
    sys.exit(main())
