"""`pgrecall eval` on a small BEIR-format dataset written here."""

import pytest

from pgrecall.composition.evaluation import document_run, ir_metrics, load_dataset
from tests.support.evaluation import QUERIES, write_dataset


@pytest.fixture
def dataset(tmp_path):
    return write_dataset(tmp_path / "tiny")


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
