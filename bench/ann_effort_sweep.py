"""How much of the HNSW graph the vector arm must read: recall@10 and latency over index sizes, filter
selectivities and ef_search, against exact search; and what pgrecall.api.vector_effort chooses there.

    PGRECALL_HOME=/tmp/speed/scifact nice -n 10 .venv/bin/python bench/ann_effort_sweep.py \
        [--dataset /work/shared/data/scifact] [--sizes 500,2000,5000,10000,23344,100000,300000,1000000] \
        [--selectivities 1,0.1,0.01,0.001] [--ef 40,64,100,150,200,300,400] [--queries 100] [--json]

Reads the vectors of the SciFact index `pgrecall eval DATASET` built (only read) and, in a scratch
database of the same server (pgrecall_ann_sweep, dropped at the end unless --keep), builds one table
per size: the first N real chunk vectors where N is at most SciFact's 23,344, beyond that the
chunks plus synthetic ones grown as bench/scale_bench.py's `mix` growth does (the normalised
interpolation of two different chunks' vectors, weight 0.35-0.65, plus Gaussian noise sigma 0.02),
so the graph has no clusters of near-copies. Each table has the index a space of pgrecall has
(hnsw (embedding vector_cosine_ops), m 16, ef_construction 64, pgvector's defaults as in the
migrations) and a column `tag`, uniform in 0..9999, with a btree index: the filter `tag < s * 10000`
keeps a fraction s of the rows (the exact scan reads them through the btree, as a filtered exact arm
reads a document's chunks through theirs; the HNSW run never does), independent of the vectors (a filter correlated with the query can
only be harder for the graph, not for the exact scan).

Per size, selectivity and ef_search, the query the vector arm runs (sql/queries/search.sql:
vector_arm, LIMIT 100, pgvector 0.8's iterative scan in relaxed order, re-sorted) with the HNSW
index forced on, and the exact scan (vector_arm_exact's `+ 0`: the index is never read). Recall@10:
the overlap of the first 10 of the 100 with the exact top 10, computed in numpy over the same
vectors (float64; ties by id). Latency: the statement's time as the client sees it, p50 over
--queries SciFact test queries, embedded by the index's own model, the HNSW and exact runs of one
query alternating. The last columns say what pgrecall.api.vector_effort.choose_effort picks for
that size and selectivity (with the table's exact row count and selectivity), with its recall and
latency read from the same measurements.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

LIMIT = 100  # the vector arm's candidates per query (pgrecall.api.search: max(k, 100))
K = 10
TAGS = 10_000
DATABASE = "pgrecall_ann_sweep"


def mix_vectors(base: np.ndarray, count: int, seed: int = 7) -> np.ndarray:
    """`count` synthetic unit vectors, each between two different rows of `base` (scale_bench's mix)."""
    rng = np.random.default_rng(seed)
    first = rng.integers(0, len(base), count)
    second = (first + rng.integers(1, len(base), count)) % len(base)
    weight = rng.uniform(0.35, 0.65, count)[:, None].astype(np.float32)
    mixed = weight * base[first] + (1 - weight) * base[second]
    mixed += rng.normal(0, 0.02, mixed.shape).astype(np.float32)
    return mixed / np.linalg.norm(mixed, axis=1, keepdims=True)


def grown(base: np.ndarray, size: int) -> np.ndarray:
    return base[:size] if size <= len(base) else np.vstack([base, mix_vectors(base, size - len(base))])


def exact_top(vectors: np.ndarray, tags: np.ndarray, queries: np.ndarray, cut: int, k: int = K) -> list[list[int]]:
    """Each query's exact top k row ids (cosine distance, ties by id) among rows with tag < cut: the
    nearest 4k by a float32 product, ranked again in float64."""
    keep = np.flatnonzero(tags < cut)
    if not len(keep):
        return [[] for _ in queries]
    kept = vectors[keep]
    norms = np.linalg.norm(kept, axis=1)
    similarity = (kept @ queries.T) / norms[:, None]
    near = min(4 * k, len(keep))
    tops = []
    for column, query in enumerate(queries.astype(np.float64)):
        rows = np.argpartition(-similarity[:, column], near - 1)[:near]
        exact = (
            kept[rows].astype(np.float64)
            @ query
            / (np.linalg.norm(kept[rows].astype(np.float64), axis=1) * np.linalg.norm(query))
        )
        order = np.lexsort((keep[rows], 1 - exact))[:k]
        tops.append([int(keep[rows][i]) for i in order])
    return tops


def recall_at(found: list[list[int]], exact: list[list[int]], k: int = K) -> float:
    overlaps = [len(set(f[:k]) & set(e)) / max(len(e), 1) for f, e in zip(found, exact, strict=True)]
    return round(statistics.fmean(overlaps), 4)


def build_table(conn, name: str, vectors: np.ndarray, tags: np.ndarray) -> float:
    """The table `name` (id, tag, embedding) with its HNSW and tag indexes; the build's seconds."""
    from psycopg import sql

    table = sql.Identifier(name)
    dims = vectors.shape[1]
    conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(table))
    conn.execute(
        sql.SQL("CREATE TABLE {} (id bigint PRIMARY KEY, tag integer NOT NULL, embedding vector({}) NOT NULL)").format(
            table, sql.Literal(dims)
        )
    )
    with (
        conn.cursor() as cursor,
        cursor.copy(sql.SQL("COPY {} (id, tag, embedding) FROM STDIN WITH (FORMAT BINARY)").format(table)) as copy,
    ):
        copy.set_types(["int8", "int4", "vector"])
        for row, (tag, vector) in enumerate(zip(tags, vectors, strict=True)):
            copy.write_row((row, int(tag), vector))
    started = time.perf_counter()
    conn.execute("SET maintenance_work_mem = '2GB'")
    conn.execute(
        sql.SQL(
            "CREATE INDEX ON {} USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64)"
        ).format(table)
    )
    conn.execute(sql.SQL("CREATE INDEX ON {} (tag)").format(table))
    conn.execute(sql.SQL("VACUUM ANALYZE {}").format(table))
    return time.perf_counter() - started


def query_texts(name: str, filtered: bool) -> tuple[str, str]:
    """The vector arm's two statements (HNSW, exact) over table `name`, as sql/queries/search.sql has them."""
    where = "WHERE tag < %(cut)s" if filtered else ""
    # `tag + 0`: the graph, never the tag's btree (which would make the HNSW run an exact one).
    hnsw_where = "WHERE tag + 0 < %(cut)s" if filtered else ""
    hnsw = (
        f"WITH nearest AS MATERIALIZED (SELECT id, embedding <=> %(q)s AS distance FROM {name} {hnsw_where}"
        f" ORDER BY embedding <=> %(q)s LIMIT {LIMIT}) SELECT id FROM nearest ORDER BY distance, id"
    )
    exact = f"SELECT id FROM {name} {where} ORDER BY (embedding <=> %(q)s) + 0, id LIMIT {LIMIT}"
    return hnsw, exact


def timed_ids(conn, text: str, params: dict[str, Any]) -> tuple[float, list[int]]:
    started = time.perf_counter()
    rows = conn.execute(text, params).fetchall()
    return (time.perf_counter() - started) * 1000, [row[0] for row in rows]


def measure(
    conn, name: str, vectors, tags, queries, selectivity: float, efs: list[int], exact: bool = True
) -> dict[str, Any]:
    """Recall@10 and p50 of the HNSW arm at each ef, and of the exact scan, for one size and filter."""
    cut = round(selectivity * TAGS)
    filtered = cut < TAGS
    hnsw, exact_text = query_texts(name, filtered)
    truth = exact_top(vectors, tags, queries, cut)
    out: dict[str, Any] = {"rows": int(len(vectors)), "matching": int((tags < cut).sum()), "ef": {}}
    exact_ms: list[float] = []
    exact_found: list[list[int]] = []
    for ef in efs:
        conn.execute("SELECT set_config('hnsw.ef_search', %s, false)", (str(ef),))
        ms: list[float] = []
        found: list[list[int]] = []
        for query in queries:
            params = {"q": query, "cut": cut}
            conn.execute("SET enable_seqscan = off")  # the HNSW index, as the arm's plan reads it
            elapsed, ids = timed_ids(conn, hnsw, params)
            conn.execute("RESET enable_seqscan")
            ms.append(elapsed)
            found.append(ids)
            if exact and ef == efs[0]:  # the exact scan once per query, alternating with the HNSW run
                elapsed, ids = timed_ids(conn, exact_text, params)
                exact_ms.append(elapsed)
                exact_found.append(ids)
        out["ef"][ef] = {"recall@10": recall_at(found, truth), "p50_ms": round(statistics.median(ms), 2)}
    if exact:
        out["exact"] = {"recall@10": recall_at(exact_found, truth), "p50_ms": round(statistics.median(exact_ms), 2)}
    return out


def chosen(conn, name, vectors, tags, queries, selectivity: float, cell: dict[str, Any]) -> dict[str, Any]:
    """What choose_effort picks for the cell (with the table's row count and the filter's share), with
    its recall and latency: read from the cell where it measured that choice, else measured now."""
    from pgrecall.api.vector_effort import choose_effort

    effort = choose_effort(cell["rows"], selectivity, LIMIT, configured=None)
    if effort.exact:
        return {"choice": "exact", **cell["exact"]}
    measured = cell["ef"].get(effort.ef_search)
    if measured is None:
        measured = measure(conn, name, vectors, tags, queries, selectivity, [effort.ef_search], exact=False)["ef"][
            effort.ef_search
        ]
    return {"choice": f"ef {effort.ef_search}", **measured}


def looked_up(cell: dict[str, Any], selectivity: float) -> dict[str, Any]:
    from pgrecall.api.vector_effort import choose_effort

    effort = choose_effort(cell["rows"], selectivity, LIMIT, configured=None)
    if effort.exact:
        return {"choice": "exact", **cell["exact"]}
    measured = cell["ef"].get(str(effort.ef_search))
    if measured is None:
        return {"choice": f"ef {effort.ef_search}", "recall@10": "not measured", "p50_ms": "-"}
    return {"choice": f"ef {effort.ef_search}", **measured}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="/work/shared/data/scifact")
    parser.add_argument("--sizes", default="500,2000,5000,10000,23344,100000,300000,1000000")
    parser.add_argument("--selectivities", default="1,0.1,0.01,0.001")
    parser.add_argument("--ef", default="40,64,100,150,200,300,400")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--keep", action="store_true", help="keep the scratch database (pgrecall_ann_sweep)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--from-json", help="print the table of an earlier --json result, measuring nothing")
    args = parser.parse_args(argv)

    if args.from_json:  # the choice as the rule now makes it, from what the run measured
        result = json.loads(Path(args.from_json).read_text())
        for entry in result["sizes"].values():
            for selectivity, cell in entry["filters"].items():
                cell["chosen"] = looked_up(cell, float(selectivity))
        print(format_table(result))
        return 0
    import psycopg

    from pgrecall.composition.evaluation import eval_database_name, load_dataset
    from pgrecall.embedders.embedding import embedder_for
    from pgrecall.logs import configure_logging
    from pgrecall.postgres import database
    from pgrecall.settings import load_settings

    configure_logging()  # warnings only, on stderr: stdout is the result
    settings = load_settings()
    dataset = load_dataset(Path(args.dataset), "test")
    server = database.database_url(settings)
    source = psycopg.conninfo.make_conninfo(server, dbname=eval_database_name(dataset.name))
    with database.connect(source, read_only=True) as conn:
        rows = conn.execute(
            "SELECT c.embedding FROM pgrecall.chunks c WHERE c.embedding IS NOT NULL ORDER BY c.id"
        ).fetchall()
    if not rows:
        print(f"no index for {dataset.name}: run `pgrecall eval {args.dataset}` first", file=sys.stderr)
        return 1
    base = np.stack([row[0].to_numpy().astype(np.float32) for row in rows])
    embedder = embedder_for(settings)
    queries = embedder.embed_queries(list(dataset.queries.values())[: args.queries]).astype(np.float32)

    database.ensure_database(server, DATABASE, fresh=True)
    scratch = psycopg.conninfo.make_conninfo(server, dbname=DATABASE)
    sizes = [int(value) for value in args.sizes.split(",") if value]
    selectivities = [float(value) for value in args.selectivities.split(",") if value]
    efs = [int(value) for value in args.ef.split(",") if value]
    result: dict[str, Any] = {
        "source": f"{dataset.name}: {len(base)} chunk vectors ({embedder.space})",
        "queries": len(queries),
        "limit": LIMIT,
        "load_average_before": [round(x, 2) for x in os.getloadavg()],
        "sizes": {},
    }
    rng = np.random.default_rng(11)
    try:
        with psycopg.connect(scratch, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            from pgvector.psycopg import register_vector

            register_vector(conn)
            conn.execute("SET hnsw.iterative_scan = relaxed_order")
            for size in sizes:
                vectors = grown(base, size)
                tags = rng.integers(0, TAGS, len(vectors))
                name = f"points_{size}"
                build_s = build_table(conn, name, vectors, tags)
                cells = {}
                for selectivity in selectivities:
                    cell = measure(conn, name, vectors, tags, queries, selectivity, efs)
                    cell["chosen"] = chosen(conn, name, vectors, tags, queries, selectivity, cell)
                    cells[str(selectivity)] = cell
                    print(f"size {size} selectivity {selectivity}: {json.dumps(cell)}", file=sys.stderr, flush=True)
                result["sizes"][str(size)] = {"index_build_s": round(build_s, 1), "filters": cells}
                if not args.keep:
                    conn.execute(f"DROP TABLE {name}")
    finally:
        if not args.keep:
            with psycopg.connect(server, autocommit=True) as conn:
                conn.execute(f"DROP DATABASE IF EXISTS {DATABASE}")
    result["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(result, indent=1) if args.json else format_table(result))
    return 0


def format_table(result: dict[str, Any]) -> str:
    sizes = result["sizes"]
    efs = list(next(iter(next(iter(sizes.values()))["filters"].values()))["ef"])
    head = "| rows | filter keeps | matching | " + " | ".join(f"ef {ef}" for ef in efs) + " | exact | chosen |"
    lines = [
        f"{result['source']}; {result['queries']} queries, LIMIT {result['limit']}; recall@10 / p50 ms",
        head,
        "|" + "---|" * (head.count("|") - 1),
    ]
    for size, entry in sizes.items():
        for selectivity, cell in entry["filters"].items():
            cols = [f"{cell['ef'][ef]['recall@10']:.3f} / {cell['ef'][ef]['p50_ms']:.2f}" for ef in efs]
            pick = cell["chosen"]
            picked = f"{pick['choice']}: {pick['recall@10']} / {pick['p50_ms']}"
            lines.append(
                f"| {int(size):,} | {float(selectivity):g} | {cell['matching']:,} | "
                + " | ".join(cols)
                + f" | {cell['exact']['recall@10']:.3f} / {cell['exact']['p50_ms']:.2f} | {picked} |"
            )
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
