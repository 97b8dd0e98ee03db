"""An HNSW index over vector(N) against one over (embedding::halfvec(N)): same rows, one run.

    .venv/bin/python bench/halfvec_index.py [--rows 300000] [--inserts 300] [--ef-search 400] [--json]

pgvector can index a full-precision column at half precision (an expression index over
`embedding::halfvec(N)` with halfvec_cosine_ops), which halves the graph. Whether that also
makes a write's HNSW insertion cheaper decides whether pgrecall's per-space indexes (0023)
should use it, so this measures both kinds side by side on the embedded server of
PGRECALL_HOME, in a scratch database (halfvec_bench) it drops and makes again:

  - rows: --rows synthetic vectors like scale_bench's `mix` growth (the normalised
    interpolation of two SciFact chunks' vectors, weight 0.35-0.65, plus Gaussian noise,
    sigma 0.02), from the index `pgrecall eval ../shared/data/scifact` built, written
    identically into two tables, one index each (m 16, ef_construction 64, as 0023 builds);
  - each index's build time and size;
  - recall@10 against exact search (numpy, full precision) and search latency, for 100
    queries of the same kind, at --ef-search, the two kinds taking turns;
  - the cost of inserting 5 rows (a document's worth) in a transaction of its own with
    synchronous_commit off, as a write commits: --inserts per kind, taking turns (ABBA),
    p50/p95 and shared-buffer accesses of the index per insert.

Prints one JSON object (--json: nothing else on stdout).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import psycopg
from pgvector.psycopg import register_vector

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/ is no package
import scale_bench  # noqa: E402

DATABASE = "halfvec_bench"
INDEXES = {
    "vector": "CREATE INDEX {table}_hnsw ON {table} USING hnsw ((embedding::vector({n})) vector_cosine_ops)",
    "halfvec": "CREATE INDEX {table}_hnsw ON {table} USING hnsw ((embedding::halfvec({n})) halfvec_cosine_ops)",
}
NEAREST = {
    "vector": "SELECT id FROM {table} ORDER BY embedding::vector({n}) <=> %s::vector({n}) LIMIT 10",
    "halfvec": "SELECT id FROM {table} ORDER BY embedding::halfvec({n}) <=> %s::vector({n})::halfvec({n}) LIMIT 10",
}


def mixes(rng: np.random.Generator, source: np.ndarray, count: int) -> np.ndarray:
    """`count` mixes of two random source vectors each, as scale_bench's `mix` growth makes them."""
    first, second = rng.integers(0, len(source), count), rng.integers(0, len(source), count)
    return scale_bench.mixed_vectors(source[first], source[second], rng)


def in_turns(i: int) -> tuple[str, str]:
    return ("vector", "halfvec") if i % 2 == 0 else ("halfvec", "vector")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=300_000)
    parser.add_argument("--inserts", type=int, default=300, help="5-row inserts per kind")
    parser.add_argument("--ef-search", type=int, default=400)
    parser.add_argument("--source", default="pgrecall_eval_scifact", help="the database whose vectors are mixed")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    from pgrecall.logs import configure_logging
    from pgrecall.postgres import database
    from pgrecall.settings import load_settings

    configure_logging()
    base = database.database_url(load_settings())
    with psycopg.connect(psycopg.conninfo.make_conninfo(base, dbname=args.source)) as conn:
        register_vector(conn)
        rows = conn.execute("SELECT embedding FROM pgrecall.chunks WHERE embedding IS NOT NULL").fetchall()
    source = np.array([row[0].to_numpy() for row in rows], dtype=np.float32)
    n = source.shape[1]
    rng = np.random.default_rng(7)
    data = mixes(rng, source, args.rows)

    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {DATABASE}")
        conn.execute(f"CREATE DATABASE {DATABASE}")
    out: dict = {"rows": args.rows, "dimensions": n, "ef_search": args.ef_search}
    with psycopg.connect(psycopg.conninfo.make_conninfo(base, dbname=DATABASE), autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        register_vector(conn)
        for kind in INDEXES:
            conn.execute(
                f"CREATE TABLE {kind}_rows (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, embedding vector)"
            )
            with conn.cursor().copy(f"COPY {kind}_rows (embedding) FROM STDIN (FORMAT BINARY)") as copy:
                copy.set_types(["vector"])
                for vector in data:
                    copy.write_row((vector,))
        conn.execute("VACUUM ANALYZE")
        conn.execute("SET maintenance_work_mem = '4GB'")
        for kind, ddl in INDEXES.items():
            started = time.perf_counter()
            conn.execute(ddl.format(table=f"{kind}_rows", n=n))
            size = conn.execute("SELECT pg_relation_size(%s::regclass)", (f"{kind}_rows_hnsw",)).fetchone()[0]
            out[kind] = {"build_s": round(time.perf_counter() - started, 1), "index_mb": round(size / 2**20, 1)}
            print(f"{kind}: built in {out[kind]['build_s']} s", file=sys.stderr)

        queries = mixes(rng, source, 100)
        exact = np.argsort(-(data @ queries.T), axis=0)[:10].T + 1  # ids count rows from 1 in COPY order
        conn.execute("SELECT set_config('hnsw.ef_search', %s, false)", (str(args.ef_search),))
        sql = {kind: NEAREST[kind].format(table=f"{kind}_rows", n=n) for kind in INDEXES}
        for kind in INDEXES:  # once, to read each graph into memory
            for query in queries:
                conn.execute(sql[kind], (query,)).fetchall()
        latency: dict[str, list[float]] = {kind: [] for kind in INDEXES}
        found = dict.fromkeys(INDEXES, 0)
        for i, query in enumerate(queries):
            for kind in in_turns(i):
                started = time.perf_counter()
                ids = {row[0] for row in conn.execute(sql[kind], (query,)).fetchall()}
                latency[kind].append((time.perf_counter() - started) * 1e3)
                found[kind] += len(ids & set(exact[i].tolist()))
        for kind in INDEXES:
            out[kind]["recall_at_10"] = found[kind] / (10 * len(queries))
            out[kind]["search_p50_ms"] = round(statistics.median(latency[kind]), 2)

        documents = mixes(rng, source, args.inserts * 2 * 5).reshape(args.inserts * 2, 5, n)
        conn.autocommit = False
        conn.execute("SET synchronous_commit = off")
        conn.commit()
        statio = "SELECT idx_blks_hit + idx_blks_read FROM pg_statio_all_indexes WHERE indexrelname = %s"

        def accesses(kind: str) -> int:
            value = conn.execute(statio, (f"{kind}_rows_hnsw",)).fetchone()[0]
            conn.commit()
            return value

        before = {kind: accesses(kind) for kind in INDEXES}
        inserts: dict[str, list[float]] = {kind: [] for kind in INDEXES}
        for i, document in enumerate(documents):
            for kind in in_turns(i):
                started = time.perf_counter()
                conn.execute(f"INSERT INTO {kind}_rows (embedding) SELECT unnest(%s::vector[])", (list(document),))
                conn.commit()
                inserts[kind].append((time.perf_counter() - started) * 1e3)
        for kind in INDEXES:
            out[kind]["insert_5_rows_ms"] = {
                "p50": round(statistics.median(inserts[kind]), 2),
                "p95": round(float(np.percentile(inserts[kind], 95)), 2),
            }
            out[kind]["insert_5_rows_index_buffers"] = round((accesses(kind) - before[kind]) / len(inserts[kind]), 1)
    out["halfvec_over_vector"] = {
        "insert_p50": round(out["halfvec"]["insert_5_rows_ms"]["p50"] / out["vector"]["insert_5_rows_ms"]["p50"], 3),
        "index_size": round(out["halfvec"]["index_mb"] / out["vector"]["index_mb"], 3),
        "build": round(out["halfvec"]["build_s"] / out["vector"]["build_s"], 3),
    }
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE {DATABASE}")
    print(json.dumps(out, indent=None if args.json else 1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
