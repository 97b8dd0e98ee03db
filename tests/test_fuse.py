import pytest

from pgrecall.api.fuse import RankedList, reciprocal_rank_fusion


def test_scores_are_sums_of_reciprocal_ranks():
    fused = reciprocal_rank_fusion([RankedList("vector", ["a", "b", "c"]), RankedList("keyword", ["c", "a"])], k=60)
    scores = {f.id: f.score for f in fused}
    assert scores["a"] == pytest.approx(1 / 61 + 1 / 62)
    assert scores["c"] == pytest.approx(1 / 63 + 1 / 61)
    assert scores["b"] == pytest.approx(1 / 62)
    assert [f.id for f in fused] == ["a", "c", "b"]


def test_ranks_per_arm_with_none_where_missing():
    fused = reciprocal_rank_fusion(
        [RankedList("vector", ["a", "b"]), RankedList("keyword", ["b"])], arms=("vector", "keyword")
    )
    ranks = {f.id: f.ranks for f in fused}
    assert ranks["a"] == {"vector": 1, "keyword": None}
    assert ranks["b"] == {"vector": 2, "keyword": 1}


def test_best_rank_across_variants_of_one_arm():
    fused = reciprocal_rank_fusion([RankedList("vector", ["x", "y"]), RankedList("vector", ["y"], weight=0.5)])
    assert {f.id: f.ranks["vector"] for f in fused} == {"x": 1, "y": 1}


def test_weights_scale_contributions():
    fused = reciprocal_rank_fusion(
        [RankedList("vector", ["a"], weight=2.0), RankedList("keyword", ["b"], weight=1.0)], k=10
    )
    assert [f.id for f in fused] == ["a", "b"]
    assert fused[0].score == pytest.approx(2 / 11)


def test_k_changes_how_much_the_top_rank_dominates():
    # b is fourth in both lists: a small k favours a single first place,
    # a large k favours agreement between the arms.
    lists = [RankedList("vector", ["a", "x", "y", "b"]), RankedList("keyword", ["c", "z", "w", "b"])]
    assert reciprocal_rank_fusion(lists, k=1)[0].id == "a"  # 1/2 > 2/5
    assert reciprocal_rank_fusion(lists, k=1000)[0].id == "b"  # 2/1004 > 1/1001


def test_rejects_non_positive_k():
    with pytest.raises(ValueError):
        reciprocal_rank_fusion([], k=0)
