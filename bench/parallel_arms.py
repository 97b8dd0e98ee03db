"""Hybrid search with the arms in turn (a searcher of one connection) against side by side (two or
more: the keyword arm on a connection of its own while the query is embedded and the vector arm runs).

    PGRECALL_HOME=... .venv/bin/python bench/parallel_arms.py --dataset ../shared/data/scifact --rounds 3

Reads the index `pgrecall eval DATASET` built. Both searchers run in this process on the same index and
take turns query by query, so load on the machine falls on both alike; each query once first to warm
them. Prints p50/p95 per side and their ratio (side by side / in turn) as JSON; the rankings are
compared too (tests/integration/test_parallel_arms.py asserts them).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

import psycopg


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="../shared/data/scifact")
    parser.add_argument("--split", default="test")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    from pgrecall.api.searcher import Searcher
    from pgrecall.composition.evaluation import eval_database_name, load_dataset
    from pgrecall.postgres import database
    from pgrecall.settings import load_settings

    settings = load_settings()
    dataset = load_dataset(Path(args.dataset), args.split)
    url = psycopg.conninfo.make_conninfo(database.database_url(settings), dbname=eval_database_name(dataset.name))
    queries = list(dataset.queries.values())
    load_before = os.getloadavg()
    with Searcher(url, settings, pool_size=1) as in_turn, Searcher(url, settings, pool_size=2) as side_by_side:
        sides = {"in_turn": in_turn, "side_by_side": side_by_side}
        for searcher in sides.values():
            for query in queries:
                searcher.search(query)
        times: dict[str, list[float]] = {name: [] for name in sides}
        differing = 0
        for round_ in range(args.rounds):
            order = list(sides.items()) if round_ % 2 == 0 else list(sides.items())[::-1]
            for query in queries:
                found = {}
                for name, searcher in order:
                    start = time.perf_counter()
                    found[name] = [hit.chunk_id for hit in searcher.search(query)]
                    times[name].append((time.perf_counter() - start) * 1000)
                differing += found["in_turn"] != found["side_by_side"]

    def summary(ms: list[float]) -> dict[str, float]:
        return {"p50_ms": round(statistics.median(ms), 2), "p95_ms": round(statistics.quantiles(ms, n=20)[18], 2)}

    result = {
        "dataset": dataset.name,
        "queries": len(queries),
        "rounds": args.rounds,
        **{name: summary(ms) for name, ms in times.items()},
        "p50_ratio": round(statistics.median(times["side_by_side"]) / statistics.median(times["in_turn"]), 3),
        "rankings_differing": differing,
        "load": [round(x, 1) for x in load_before + os.getloadavg()],
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
