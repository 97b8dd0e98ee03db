"""`pgrecall eval` on a small BEIR-format dataset written here."""

import json

import psycopg
import pytest
from psycopg import sql

from pgrecall.evaluate import document_run, ir_metrics, load_dataset, run_eval
from pgrecall.settings import load_settings

DOCUMENTS = {
    "d1": (
        "Sourdough starters",
        "A sourdough starter is a culture of wild yeast and lactobacilli fed with flour and water.",
    ),
    "d2": ("Tidal energy", "Tidal turbines convert the kinetic energy of moving sea water into electricity."),
    "d3": ("Glacier retreat", "Mountain glaciers retreat as summer melt exceeds winter snow accumulation."),
    "d4": ("Error E-4711", "The ledger export fails with error code E-4711 when storage throttles reads."),
    "d5": ("Error E-4712", "Invoice rendering fails with error code E-4712 when a template variable is missing."),
    "d6": ("Beekeeping", "Honey bees overwinter as a cluster that shivers to keep the queen warm."),
}
QUERIES = {
    "q1": "how do I feed a sourdough starter",
    "q2": "electricity from tides",
    "q3": "E-4711",
    "q4": "bees in winter",
}
QRELS = {"q1": "d1", "q2": "d2", "q3": "d4", "q4": "d6"}


@pytest.fixture
def dataset(tmp_path):
    folder = tmp_path / "tiny"
    (folder / "qrels").mkdir(parents=True)
    with open(folder / "corpus.jsonl", "w") as out:
        for doc_id, (title, text) in DOCUMENTS.items():
            out.write(json.dumps({"_id": doc_id, "title": title, "text": text}) + "\n")
    with open(folder / "queries.jsonl", "w") as out:
        for query_id, text in {**QUERIES, "unjudged": "nothing"}.items():
            out.write(json.dumps({"_id": query_id, "text": text}) + "\n")
    (folder / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t1\n" for q, d in QRELS.items())
    )
    return folder


def test_dataset_loading_keeps_judged_queries_only(dataset):
    loaded = load_dataset(dataset)
    assert set(loaded.queries) == set(QUERIES)
    assert loaded.qrels["q3"] == {"d4": 1}


def test_metrics_match_hand_computed_values():
    qrels = {"q": {"a": 1, "b": 1}}
    run = {"q": {"x": 3.0, "a": 2.0, "b": 1.0}}  # relevant at ranks 2 and 3
    metrics = ir_metrics(qrels, run)
    ideal = 1 + 1 / 1.5849625007211563  # 1/log2(2) + 1/log2(3)
    assert metrics["ndcg@10"] == pytest.approx((1 / 1.5849625007211563 + 1 / 2) / ideal, abs=1e-4)
    assert metrics["mrr@10"] == pytest.approx(0.5)
    assert metrics["recall@10"] == 1.0


def test_best_chunk_decides_a_documents_rank():
    class Hit:
        def __init__(self, path):
            self.path = path

    hits = [Hit("b.md"), Hit("a.md"), Hit("b.md"), Hit("c.md")]
    run = document_run(hits, {"a.md": "A", "b.md": "B", "c.md": "C"})
    assert sorted(run, key=run.get, reverse=True) == ["B", "A", "C"]


def test_eval_indexes_into_its_own_database_and_scores_every_mode(dataset, db_url, tmp_path):
    settings = load_settings({"PGRECALL_HOME": str(tmp_path / "home"), "PGRECALL_DATABASE_URL": db_url})
    try:
        result = run_eval(settings, dataset)
        assert result["dataset"] == "tiny" and result["queries"] == 4
        assert set(result["modes"]) == {"vector", "keyword", "hybrid", "hybrid:rrf", "hybrid:convex", "hybrid+enrich"}
        for metrics in result["modes"].values():
            assert set(metrics) == {"ndcg@10", "recall@10", "recall@100", "mrr@10", "p50_ms", "p95_ms"}
        assert result["modes"]["hybrid"]["ndcg@10"] == 1.0
        assert result["modes"]["hybrid:rrf"]["ndcg@10"] == 1.0
        assert result["modes"]["hybrid:convex"]["ndcg@10"] == 1.0
        assert result["modes"]["keyword"]["mrr@10"] == 1.0
        assert result["indexing"]["indexed"] == 6
        assert 0.0 <= result["ann_recall@10"] <= 1.0
        with psycopg.connect(db_url) as conn:  # the user's index is untouched
            assert conn.execute("SELECT count(*) FROM pgrecall.documents").fetchone()[0] == 0
        again = run_eval(settings, dataset, modes=["keyword"])
        assert again["indexing"]["unchanged"] == 6 and again["indexing"]["indexed"] == 0
    finally:
        with psycopg.connect(db_url, autocommit=True) as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier("pgrecall_eval_tiny"))
            )
