"""HNSW recall@10 on a scaled index, by chunk and by source abstract, at several ef_search.

    .venv/bin/python bench/duplicate_recall.py [--database pgrecall_scale_bench] [--queries 40] [--ef-search 200,400,1000]

scale_bench's copies of one abstract are near-duplicates: a query's exact top 10
can be ten copies of one abstract. This compares the HNSW arm's top 10 with exact
search's both as chunks and as the source abstracts they were copied from
("copyN/" stripped from the path), on the embedded server of PGRECALL_HOME.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys

import psycopg
from pgvector.psycopg import register_vector

SOURCE = """SELECT c.id, regexp_replace(d.path, '^copy[0-9]+/', '')
FROM pgrecall.chunks c JOIN pgrecall.documents d ON d.id = c.document_id WHERE c.id = ANY(%s)"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database", default="pgrecall_scale_bench")
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--dataset", default="../shared/data/scifact")
    parser.add_argument("--ef-search", default="200,400,1000")
    args = parser.parse_args()

    from pgrecall.api import read_queries as store
    from pgrecall.embedders.embedding import embedder_for
    from pgrecall.postgres import database
    from pgrecall.settings import load_settings

    settings = load_settings()
    url = psycopg.conninfo.make_conninfo(database.database_url(settings), dbname=args.database)
    with open(f"{args.dataset}/queries.jsonl", encoding="utf-8") as lines:
        queries = [json.loads(line)["text"] for line in lines][: args.queries]
    embedder = embedder_for(settings)
    vectors = embedder.embed_queries(queries)
    with psycopg.connect(url) as conn:
        register_vector(conn)
        # The search side's own vector arm, exact and through the query's space's HNSW index.
        session = store.ReadSession(conn, None, ef_search=40)
        space = session.query_space(embedder.space)
        conn.execute("SET hnsw.iterative_scan = relaxed_order")

        def nearest(vector, exact: bool = False) -> list[int]:
            return [hit.chunk_id for hit in session.vector_arm(vector, 10, exact=exact, space=space)]

        exact = [nearest(vector, exact=True) for vector in vectors]
        for ef_search in [int(value) for value in args.ef_search.split(",") if value]:
            conn.execute("SELECT set_config('hnsw.ef_search', %s, false)", (str(ef_search),))
            chunk_recall, source_recall = [], []
            for vector, truth in zip(vectors, exact, strict=True):
                found = nearest(vector)
                source = dict(conn.execute(SOURCE, (found + truth,)).fetchall())
                chunk_recall.append(len(set(found) & set(truth)) / len(truth))
                wanted = {source[i] for i in truth}
                source_recall.append(len(wanted & {source[i] for i in found}) / len(wanted))
            result = {
                "ef_search": ef_search,
                "queries": len(queries),
                "chunk_recall@10": round(statistics.fmean(chunk_recall), 3),
                "source_document_recall@10": round(statistics.fmean(source_recall), 3),
            }
            print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
