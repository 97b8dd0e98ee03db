"""How much the hybrid figure depends on how the two arms are fused, on one index.

    .venv/bin/python bench/fusion_bench.py [--dataset ../shared/data/scifact]

Reuses the index that `pgrecall eval DATASET` built (its own database) and the
search side's own arms (pgrecall.api.read_queries.ReadSession), and fuses their
lists with the same RRF (k = 60) in three ways:

- chunks: the vector arm's chunks and the keyword arm's documents, each standing
  for its best chunk; a chunk both arms pick adds up both ranks. This is what
  `search()` does, with 100 candidates per arm for k <= 100 and k candidates beyond.
- chunks, 300 candidates per arm.
- documents: each arm reduced to one entry per document, RRF over documents.

Prints nDCG@10, Recall@10, Recall@100 and MRR@10 (ir-measures) for each.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import psycopg

from pgrecall.composition.evaluation import DEPTH, eval_database_url, ir_metrics, load_dataset, write_notes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="../shared/data/scifact")
    parser.add_argument("--split", default="test")
    args = parser.parse_args()

    from pgrecall import bm25
    from pgrecall.api import read_queries as store
    from pgrecall.api.fuse import RankedList, reciprocal_rank_fusion
    from pgrecall.embedders.embedding import embedder_for
    from pgrecall.settings import load_settings

    settings = load_settings()
    dataset = load_dataset(Path(args.dataset), args.split)
    folder = settings.home / "eval" / dataset.name / "notes"
    mapping = write_notes(dataset, folder)
    url = eval_database_url(settings, dataset, fresh=False)
    with psycopg.connect(url) as conn:
        corpus_id_of = {
            chunk_id: mapping.get(path)
            for chunk_id, path in conn.execute(
                "SELECT c.id, d.path FROM pgrecall.chunks c JOIN pgrecall.documents d ON d.id = c.document_id"
            )
        }
    if not corpus_id_of:
        print(f"no index for {dataset.name}: run `pgrecall eval {args.dataset}` first", file=sys.stderr)
        return 1

    def documents(chunk_ids) -> list[str]:
        return list(dict.fromkeys(corpus_id_of[c] for c in chunk_ids if corpus_id_of.get(c)))

    def as_run(ranked: list[str]) -> dict[str, float]:
        return {corpus_id: float(DEPTH - rank) for rank, corpus_id in enumerate(ranked[:DEPTH])}

    def fuse(lists: list[list]) -> list:
        ranked = [RankedList(arm, ids) for arm, ids in zip(("keyword", "vector"), lists, strict=True)]
        return [f.id for f in reciprocal_rank_fusion(ranked, k=settings.rrf_k)]

    embedder = embedder_for(settings)
    query_ids = list(dataset.queries)
    vectors = embedder.embed_queries([dataset.queries[q] for q in query_ids])
    runs: dict[str, dict[str, dict[str, float]]] = {}
    with store.open_pool(url, max_size=1) as pool, pool.connection() as conn:
        for candidates in (100, 300):
            with conn.transaction():
                session = store.ReadSession(
                    conn, None, ef_search=settings.ef_search and max(settings.ef_search, candidates)
                )
                space = session.query_space(embedder.space)
                for query_id, vector in zip(query_ids, vectors, strict=True):
                    keyword = [i for i, _ in session.keyword_arm(dataset.queries[query_id], candidates, depth=1000)]
                    nearest = [i for i, _ in session.vector_arm(vector, candidates, space=space)]
                    runs.setdefault(f"chunks, {candidates} candidates", {})[query_id] = as_run(
                        documents(fuse([keyword, nearest]))
                    )
                    runs.setdefault(f"documents, {candidates} candidates", {})[query_id] = as_run(
                        fuse([documents(keyword), documents(nearest)])
                    )
    result = {label: ir_metrics(dataset.qrels, run) for label, run in runs.items()}
    print(json.dumps({"dataset": dataset.name, "rrf_k": settings.rrf_k, "k1": bm25.K1, "b": bm25.B, "fusions": result}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
