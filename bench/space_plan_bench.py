"""Two embedding spaces of different widths in one index: the plan and latency of each one's vector arm.

    .venv/bin/python bench/space_plan_bench.py [--sizes 20000,5000] [--dimensions 384,768] [--runs 20]

In a fresh home (its own embedded server), writes --sizes random unit vectors of each
--dimensions width as the chunks of one document per space (through each space's own HNSW
index, made by pgrecall.embedding_space_id as a writer makes it), runs ANALYZE, then prints per
space the plan the planner picks on its own for the search side's vector arm (EXPLAIN ANALYZE)
and its latency over --runs random queries. No model is loaded.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="20000,5000")
    parser.add_argument("--dimensions", default="384,768")
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    sizes = [int(value) for value in args.sizes.split(",")]
    widths = [int(value) for value in args.dimensions.split(",")]

    os.environ["PGRECALL_HOME"] = tempfile.mkdtemp(prefix="pgrecall-space-plan-")
    os.environ.pop("PGRECALL_DATABASE_URL", None)
    import numpy as np
    import psycopg
    from pgvector.psycopg import register_vector

    from pgrecall.api import read_queries as store
    from pgrecall.postgres import database
    from pgrecall.postgres.migrator import migrated_url
    from pgrecall.settings import load_settings

    settings = load_settings()
    try:
        url = migrated_url(settings)
        with psycopg.connect(url) as conn:
            register_vector(conn)
            spaces = []
            for size, width in zip(sizes, widths, strict=True):
                name = f"random-{width}@sha256:000000000000/{width}/bench"
                space_id = conn.execute("SELECT pgrecall.embedding_space_id(%s, %s)", (name, width)).fetchone()[0]
                conn.commit()
                document = conn.execute(
                    """INSERT INTO pgrecall.documents (source_root, path, kind, chunk_count, embedding_space)
                       VALUES ('/bench', %s, 'markdown', %s, %s) RETURNING id""",
                    (name, size, name),
                ).fetchone()[0]
                started = time.perf_counter()
                conn.execute(
                    """INSERT INTO pgrecall.chunks
                           (document_id, ordinal, text, token_count, embedding, embedding_space_id, fts, term_count)
                       SELECT %s, g.g, 'x', 1,
                              (SELECT array_agg(random() - 0.5)::vector FROM generate_series(1, %s) d(i) WHERE g.g > 0),
                              %s, ''::tsvector, 0
                       FROM generate_series(1, %s) g(g)""",
                    (document, width, space_id, size),
                )
                conn.commit()
                spaces.append((space_id, width, size, round(time.perf_counter() - started, 1)))
            conn.execute("ANALYZE pgrecall.chunks")
            conn.commit()
            rng = np.random.default_rng(0)
            for space_id, width, size, load_s in spaces:
                query = store.vector_arm_query("vector_arm", False, space_id, width)
                # As a search sets them (pgrecall.api.store.ReadSession): ef_search is PGRECALL_EF_SEARCH.
                conn.execute("SELECT set_config('hnsw.ef_search', %s, false)", (str(max(settings.ef_search, 100)),))
                conn.execute("SET hnsw.iterative_scan = relaxed_order")
                timings, plan = [], []
                for run in range(args.runs + 1):
                    params = {
                        **store._filter_values(None),
                        "embedding": rng.random(width, dtype=np.float32),
                        "limit": 100,
                    }
                    if run == 0:
                        explain = psycopg.sql.SQL("EXPLAIN (ANALYZE, COSTS OFF) ") + query
                        plan = [row[0] for row in conn.execute(explain, params)]
                        continue
                    started = time.perf_counter()
                    conn.execute(query, params).fetchall()
                    timings.append((time.perf_counter() - started) * 1000)
                conn.rollback()
                print(
                    json.dumps(
                        {
                            "space_id": space_id,
                            "dimensions": width,
                            "chunks": size,
                            "load_s": load_s,
                            "index_scan": next((line.strip() for line in plan if "Index Scan" in line), None),
                            "vector_arm_p50_ms": round(statistics.median(timings), 2),
                            "vector_arm_max_ms": round(max(timings), 2),
                            "ef_search": max(settings.ef_search, 100),
                        }
                    )
                )
    finally:
        database.stop_embedded(settings)
    return 0


if __name__ == "__main__":
    sys.exit(main())
