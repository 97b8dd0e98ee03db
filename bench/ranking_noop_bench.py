"""Without a project, the ranking after fusion changes nothing: on the index `pgrecall eval
DATASET` built, every test query's top 10 under each fusion, as Searcher.search gives it,
compared with the fusion's own order (the ranking after fusion switched off).

    .venv/bin/python bench/ranking_noop_bench.py "host=... dbname=pgrecall_eval_scifact" ../shared/data/scifact

Prints one JSON object: the queries compared and how many rankings differ.
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

from pgrecall.api import searcher as search_module
from pgrecall.api.searcher import Searcher
from pgrecall.settings import load_settings


def main(url: str, data: Path) -> None:
    queries = {q["_id"]: q["text"] for q in map(json.loads, (data / "queries.jsonl").open(encoding="utf-8"))}
    with (data / "qrels" / "test.tsv").open(encoding="utf-8") as qrels:
        wanted = sorted({row[0] for row in csv.reader(qrels, delimiter="\t") if row[0] != "query-id"})
    searcher = Searcher(url, load_settings(), pool_size=1)
    fusions = ("convex", "rrf")
    changed = 0
    original = search_module.exact_ties
    try:
        for fusion in fusions:
            for query_id in wanted:
                as_is = [h.chunk_id for h in searcher.search(queries[query_id], k=10, fusion=fusion)]
                search_module.exact_ties = lambda fused: []
                try:
                    fusion_only = [h.chunk_id for h in searcher.search(queries[query_id], k=10, fusion=fusion)]
                finally:
                    search_module.exact_ties = original
                changed += as_is != fusion_only
    finally:
        searcher.close()
    print(json.dumps({"queries": len(wanted), "fusions": fusions, "rankings_changed": changed}))


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]))
