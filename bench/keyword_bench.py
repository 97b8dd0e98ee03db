"""The keyword arm against that of another revision, side by side on one index.

    nice -n 19 .venv/bin/python bench/keyword_bench.py [--dataset ../shared/data/scifact] [--against main]

Reuses the index `pgrecall eval DATASET` built (its own database). Each query runs through this
tree's keyword arm (ReadSession.keyword_arm: its postings query, then pgrecall.api.keyword's
ranking) and through the keyword arm of `--against` (one query of its sql/queries/search.sql,
read with git show: a revision from before the ranking moved to Python), alternately on one
connection, in read-only transactions as searches run them (k = 10: 100 candidates, depth
1000), `--rounds` times; the first round warms both and is not timed. Prints p50/p95 of each and
their ratio, checks that both give the same lists (scores within 1e-9), and with `--explain` the
EXPLAIN (ANALYZE, BUFFERS) of each one's SQL for the first few queries: time per plan node class
and buffers.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import psycopg
from harness.timing import percentile

from pgrecall import bm25
from pgrecall.composition.evaluation import eval_database_url, load_dataset
from pgrecall.contract import FILTER_FIELDS
from pgrecall.postgres import database, queries
from pgrecall.terms import identifier_terms


def revision_arm(revision: str) -> str:
    """The keyword arm (unfiltered) of sql/queries/search.sql at `revision`, from before its
    postings were scored in Python (pgrecall.api.keyword): one query that ranks."""
    text = subprocess.run(
        ["git", "show", f"{revision}:sql/queries/search.sql"],
        check=True,
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parent,
    ).stdout
    raw = queries.parse_named_queries(text)
    if "keyword_arm" not in raw:
        raise SystemExit(
            f"{revision} scores the keyword arm's postings in Python: compare whole searches instead"
            " (--end-to-end, run by each tree's interpreter)"
        )
    # Unfiltered, as pgrecall.api.store expanded its templates then: no joins, no document filter.
    return raw["keyword_arm"].replace("{filter_joins}", "").replace("{document_filter}", "TRUE")


def params(query: str) -> dict:
    return {
        **dict.fromkeys(FILTER_FIELDS),
        "query": query,
        "identifiers": identifier_terms(query),
        "languages": None,
        "k1": bm25.K1,
        "b": bm25.B,
        "depth": 1000,
        "limit": 100,
    }


def plan_summary(plan: dict) -> dict:
    """Exclusive time per node type (ms, approximate: a CTE's work shows again under the CTE Scan
    that first reads it) and the plan's shared buffers."""
    exclusive: dict[str, float] = defaultdict(float)

    def walk(node: dict) -> float:
        total = node.get("Actual Total Time", 0.0) * node.get("Actual Loops", 1)
        children = sum(walk(child) for child in node.get("Plans", []))
        exclusive[node["Node Type"]] += max(total - children, 0.0)
        return total

    root = plan["Plan"]
    walk(root)
    return {
        "execution_ms": round(plan["Execution Time"], 2),
        "planning_ms": round(plan["Planning Time"], 2),
        "shared_hit": root.get("Shared Hit Blocks", 0),
        "shared_read": root.get("Shared Read Blocks", 0),
        "top_nodes_ms": {k: round(v, 2) for k, v in sorted(exclusive.items(), key=lambda kv: -kv[1])[:6]},
    }


def index_url(settings, dataset, args: argparse.Namespace) -> str:
    """--database as it is (neither created nor migrated), else the index `pgrecall eval` built."""
    if args.database:
        return psycopg.conninfo.make_conninfo(database.database_url(settings), dbname=args.database)
    return eval_database_url(settings, dataset, fresh=False)


def end_to_end(args: argparse.Namespace) -> int:
    import pgrecall
    from pgrecall.api.searcher import Searcher
    from pgrecall.settings import load_settings

    settings = load_settings()
    dataset = load_dataset(Path(args.dataset), args.split)
    url = index_url(settings, dataset, args)
    texts = list(dataset.queries.values())
    timings: list[float] = []
    with Searcher(url, settings, pool_size=1) as searcher:
        for round_ in range(args.rounds + 1):
            for query in texts:
                started = time.perf_counter()
                searcher.search(query, k=10, mode="keyword")
                if round_:
                    timings.append((time.perf_counter() - started) * 1000)
    tree = str(Path(pgrecall.__file__).resolve().parent.parent)
    print(
        json.dumps(
            {
                "tree": tree,
                "keyword_search_p50_ms": round(statistics.median(timings), 2),
                "keyword_search_p95_ms": round(percentile(timings, 95), 2),
            }
        )
    )
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="../shared/data/scifact")
    parser.add_argument("--split", default="test")
    parser.add_argument("--against", default="main", help="the git revision whose keyword arm is the baseline")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--explain", type=int, default=0, help="EXPLAIN ANALYZE the first N queries")
    parser.add_argument(
        "--end-to-end",
        action="store_true",
        help="instead: time whole keyword searches (Searcher.search, k = 10: session, arm, hits) of the tree "
        "this interpreter imports; run it with another tree's interpreter to compare",
    )
    parser.add_argument(
        "--database", help="another index of the server to read, e.g. bench/scale_bench.py's pgrecall_scale_bench_mix"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.end_to_end:
        return end_to_end(args)

    from pgrecall.api import read_queries as store
    from pgrecall.settings import load_settings

    settings = load_settings()
    dataset = load_dataset(Path(args.dataset), args.split)
    url = index_url(settings, dataset, args)
    theirs_sql = revision_arm(args.against)

    def ours(conn: psycopg.Connection, query: str) -> list:
        """This tree's arm: its postings query, then pgrecall.api.keyword's ranking."""
        return store.ReadSession(conn, None, ef_search=0, vectors=False).keyword_arm(query, 100, 1000)

    def theirs(conn: psycopg.Connection, query: str) -> list:
        return conn.execute(theirs_sql, params(query)).fetchall()

    arms = {"ours": ours, args.against: theirs}
    explained_sql = {"ours": store.Q[("keyword_postings", False)], args.against: theirs_sql}
    texts = list(dataset.queries.values())
    timings: dict[str, list[float]] = {name: [] for name in arms}
    differing = 0
    with psycopg.connect(url) as conn:
        conn.read_only = True
        if not conn.execute("SELECT count(*) FROM pgrecall.chunks").fetchone()[0]:
            print(f"no index for {dataset.name}: run `pgrecall eval {args.dataset}` first", file=sys.stderr)
            return 1
        for round_ in range(args.rounds + 1):
            order = list(arms) if round_ % 2 == 0 else list(reversed(arms))  # neither always goes first
            for query in texts:
                found = {}
                for name in order:
                    with conn.transaction():
                        started = time.perf_counter()
                        found[name] = arms[name](conn, query)
                        elapsed = (time.perf_counter() - started) * 1000
                    if round_:
                        timings[name].append(elapsed)
                ours, theirs = found["ours"], found[args.against]
                # Chunks of equal scores (to the last bits a sum's order moves) may trade places.
                same = len(ours) == len(theirs) and all(
                    abs(a - b) <= 1e-9 for (_, a), (_, b) in zip(ours, theirs, strict=True)
                )
                differing += round_ == 0 and not same
        explained = {}
        for name, text in explained_sql.items():  # ours: its SQL alone
            summaries = []
            for query in texts[: args.explain]:
                with conn.transaction():
                    row = conn.execute("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + text, params(query)).fetchone()
                summaries.append(plan_summary(row[0][0]))
            if summaries:
                explained[name] = summaries
    result = {
        "dataset": dataset.name,
        "queries": len(texts),
        "rounds": args.rounds,
        "queries_ranked_differently": differing,
        **{
            name: {"p50_ms": round(statistics.median(ms), 2), "p95_ms": round(percentile(ms, 95), 2)}
            for name, ms in timings.items()
        },
    }
    result["p50_ratio"] = round(result["ours"]["p50_ms"] / result[args.against]["p50_ms"], 3)
    result["p95_ratio"] = round(result["ours"]["p95_ms"] / result[args.against]["p95_ms"], 3)
    if explained:
        result["explain"] = explained
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        for name in arms:
            print(f"{name:>8}: p50 {result[name]['p50_ms']} ms, p95 {result[name]['p95_ms']} ms")
        print(f"ratio ours/{args.against}: p50 {result['p50_ratio']}, p95 {result['p95_ratio']}")
        print(f"queries ranked differently: {differing} of {len(texts)}")
        for name, summaries in explained.items():
            for summary in summaries:
                print(f"{name:>8} explain: {json.dumps(summary)}")
    return 0 if differing == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
