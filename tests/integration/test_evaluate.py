"""`pgrecall eval` end to end: it indexes a small BEIR-format dataset into a database of its own."""

import psycopg
import pytest
from psycopg import sql

from pgrecall.evaluate import run_eval
from pgrecall.settings import load_settings
from tests.support.evaluation import write_dataset


@pytest.fixture
def dataset(tmp_path):
    return write_dataset(tmp_path / "tiny")


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
