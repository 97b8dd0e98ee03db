"""`pgrecall eval` end to end: it indexes a small BEIR-format dataset into a database of its own."""

import psycopg
import pytest
from psycopg import sql

from pgrecall.composition.evaluation import run_eval
from pgrecall.settings import load_settings
from tests.support.evaluation import write_dataset


@pytest.fixture
def dataset(tmp_path):
    return write_dataset(tmp_path / "tiny")


def test_eval_indexes_into_its_own_database_and_scores_every_mode(dataset, db_url, tmp_path):
    settings = load_settings({"PGRECALL_HOME": str(tmp_path / "home"), "PGRECALL_DATABASE_URL": db_url})
    try:
        result = run_eval(settings, dataset, hnsw_recall=True)
        assert result["dataset"] == "tiny" and result["queries"] == 4
        assert set(result["modes"]) == {"vector", "keyword", "hybrid", "hybrid:rrf", "hybrid:convex", "hybrid+enrich"}
        for metrics in result["modes"].values():
            assert set(metrics) == {"ndcg@10", "recall@10", "recall@100", "mrr@10", "p50_ms", "p95_ms", "rankings"}
        assert result["modes"]["hybrid"]["ndcg@10"] == 1.0
        assert result["modes"]["hybrid:rrf"]["ndcg@10"] == 1.0
        assert result["modes"]["hybrid:convex"]["ndcg@10"] == 1.0
        assert result["modes"]["keyword"]["mrr@10"] == 1.0
        assert result["indexing"]["indexed"] == 6
        assert result["vector_search"] == "exact"
        assert result["ann_recall@10"] == 1.0  # six chunks: the graph finds them all
        with psycopg.connect(db_url) as conn:  # the user's index is untouched
            assert conn.execute("SELECT count(*) FROM pgrecall.documents").fetchone()[0] == 0
        again = run_eval(settings, dataset, modes=["keyword"])
        assert again["indexing"]["unchanged"] == 6 and again["indexing"]["indexed"] == 0
        assert "ann_recall@10" not in again  # measured on request only (--hnsw-recall)
    finally:
        with psycopg.connect(db_url, autocommit=True) as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier("pgrecall_eval_tiny"))
            )


def _figures(result: dict) -> dict:
    """What an eval found, without what the machine's load moves (latencies, indexing time)."""
    timed = {"p50_ms", "p95_ms"}
    modes = {label: {k: v for k, v in metrics.items() if k not in timed} for label, metrics in result["modes"].items()}
    indexing = {k: v for k, v in result["indexing"].items() if k not in {"seconds", "chunks_per_s"}}
    return {**result, "modes": modes, "indexing": indexing}


def test_two_fresh_evals_of_the_same_data_give_identical_figures(dataset, db_url, tmp_path):
    """Each eval indexes from scratch into a dropped database (a new HNSW graph) and ranks vectors
    exactly: figures and every query's ranking (the digest) agree."""
    settings = load_settings({"PGRECALL_HOME": str(tmp_path / "home"), "PGRECALL_DATABASE_URL": db_url})
    modes = ["vector", "keyword", "hybrid"]
    try:
        first = run_eval(settings, dataset, fresh=True, modes=modes)
        second = run_eval(settings, dataset, fresh=True, modes=modes)
    finally:
        with psycopg.connect(db_url, autocommit=True) as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier("pgrecall_eval_tiny"))
            )
    assert first["indexing"]["indexed"] == second["indexing"]["indexed"] == 6  # both indexed afresh
    assert _figures(first) == _figures(second)
    # The digest tells rankings apart: the three modes do not rank every query's documents alike.
    assert len({metrics["rankings"] for metrics in first["modes"].values()}) > 1
