"""Query-language detection against analysing a query in every indexed language (issue 21, item 2).

Runs on the database `pgrecall eval DATASET` indexed (run that first, same PGRECALL_HOME), so the
index is the real pipeline's. For each query the keyword arm runs twice: analysed with the
configuration of every language the index holds (what search does), and with the query's detected
language only (pgrecall.language_detection.detect among PGRECALL_LANGUAGES, plus `simple`; a query
detected as `simple` keeps every language). Prints nDCG@10 and Recall@100 of both.

    PGRECALL_HOME=... .venv/bin/python bench/query_language.py ../shared/data/germanquad
"""

from __future__ import annotations

import argparse
from pathlib import Path

import psycopg

from pgrecall.api import read_queries as store
from pgrecall.composition.evaluation import DEPTH, _safe_name, document_run, ir_metrics, load_dataset, write_notes
from pgrecall.language_detection import detect
from pgrecall.languages import SIMPLE, parse_languages
from pgrecall.postgres import database
from pgrecall.settings import load_settings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--split", default="test")
    args = parser.parse_args()
    settings = load_settings()
    dataset = load_dataset(args.dataset, args.split)
    mapping = write_notes(dataset, settings.home / "eval" / _safe_name(dataset.name) / "notes")
    url = database.database_url(settings)
    name = f"pgrecall_eval_{_safe_name(dataset.name).lower()}"[:63]
    eval_url = psycopg.conninfo.make_conninfo(url, dbname=name)
    languages = parse_languages(settings.languages)
    runs: dict[str, dict[str, dict[str, float]]] = {"all indexed languages": {}, "detected query language": {}}
    detected_counts: dict[str, int] = {}
    with psycopg.connect(eval_url) as conn:
        with conn.transaction():
            indexed = store.ReadSession(conn, None, 40).index_languages()
        for query_id, query in dataset.queries.items():
            language = detect(query, languages)
            detected_counts[language] = detected_counts.get(language, 0) + 1
            for label, chosen in (
                ("all indexed languages", None),
                ("detected query language", None if language == SIMPLE else [language, SIMPLE]),
            ):
                with conn.transaction():
                    session = store.ReadSession(conn, None, 40)
                    hits = session.keyword_arm(query, limit=3 * DEPTH, depth=1000, languages=chosen)
                    rows = session.fetch([h.chunk_id for h in hits])
                ordered = [rows[h.chunk_id] for h in hits if h.chunk_id in rows]
                runs[label][query_id] = document_run(ordered, mapping)
    print(f"{dataset.name} ({args.split}, {len(dataset.queries)} queries); index languages: {', '.join(indexed)}")
    print(f"queries detected as: {detected_counts}")
    for label, run in runs.items():
        metrics = ir_metrics(dataset.qrels, run)
        print(f"{label:<26} nDCG@10 {metrics['ndcg@10']:.4f}  Recall@100 {metrics['recall@100']:.4f}")


if __name__ == "__main__":
    main()
