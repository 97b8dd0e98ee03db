import pytest

from pgrecall.api.fuse import Facts, Fused, RankedList, convex_fusion, reciprocal_rank_fusion, rerank


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


# --- convex fusion ---------------------------------------------------------------------------------

from pgrecall.api.fuse import min_max  # noqa: E402


def test_min_max_puts_the_best_at_one_and_the_worst_at_zero():
    assert min_max([0.9, 0.6, 0.5]) == pytest.approx([1.0, 0.25, 0.0])
    assert min_max([]) == []


def test_min_max_of_equal_scores_is_one_for_each():
    assert min_max([3.0, 3.0]) == [1.0, 1.0]
    assert min_max([7.5]) == [1.0]


def test_convex_scores_are_hand_computed_weighted_sums():
    # vector similarities 0.9, 0.7, 0.5 -> 1, 0.5, 0; BM25 12, 3, 0 -> 1, 0.25, 0
    lists = [
        RankedList("keyword", ["b", "c", "d"], scores=[12.0, 3.0, 0.0]),
        RankedList("vector", ["a", "b", "c"], scores=[0.9, 0.7, 0.5]),
    ]
    fused = convex_fusion(lists, alpha=0.5)
    scores = {f.id: f.score for f in fused}
    assert scores == pytest.approx({"a": 0.5, "b": 0.75, "c": 0.125, "d": 0.0})
    assert [f.id for f in fused] == ["b", "a", "c", "d"]
    by_id = {f.id: f for f in fused}
    assert by_id["b"].arm_scores == pytest.approx({"keyword": 1.0, "vector": 0.5})
    assert by_id["b"].ranks == {"keyword": 1, "vector": 2}


def test_convex_a_candidate_missing_from_an_arm_gets_zero_from_it():
    lists = [
        RankedList("vector", ["a", "b"], scores=[0.8, 0.4]),
        RankedList("keyword", ["b", "c"], scores=[5.0, 1.0]),
    ]
    by_id = {f.id: f for f in convex_fusion(lists, alpha=0.3, arms=("vector", "keyword"))}
    assert by_id["a"].arm_scores == {"vector": 1.0, "keyword": None}
    assert by_id["a"].score == pytest.approx(0.3)
    assert by_id["a"].ranks == {"vector": 1, "keyword": None}
    assert by_id["c"].score == pytest.approx(0.0)
    assert by_id["b"].score == pytest.approx(0.7)


def test_convex_uses_score_gaps_that_rrf_ignores():
    # The keyword arm's first hit towers over the rest; RRF sees only ranks.
    lists = [
        RankedList("keyword", ["x", "y", "z"], scores=[20.0, 2.1, 2.0]),
        RankedList("vector", ["y", "z", "x", "w"], scores=[0.80, 0.79, 0.78, 0.40]),
    ]
    assert reciprocal_rank_fusion(lists)[0].id == "y"  # 1/62 + 1/61 against x's 1/61 + 1/63
    fused = convex_fusion(lists)
    assert fused[0].id == "x"  # x: 0.5 * 1 + 0.5 * 0.95; y: 0.5 * 0.0056 + 0.5 * 1
    assert fused[0].score == pytest.approx(0.975)


def test_convex_an_all_equal_list_gives_each_candidate_one():
    lists = [
        RankedList("keyword", ["p", "q"], scores=[4.0, 4.0]),
        RankedList("vector", ["q", "r"], scores=[0.9, 0.1]),
    ]
    scores = {f.id: f.score for f in convex_fusion(lists, alpha=0.5)}
    assert scores == pytest.approx({"p": 0.5, "q": 1.0, "r": 0.0})


def test_convex_ties_keep_the_order_of_first_appearance():
    lists = [
        RankedList("keyword", ["k1", "k2"], scores=[2.0, 1.0]),
        RankedList("vector", ["v1", "v2"], scores=[0.9, 0.5]),
    ]
    assert [f.id for f in convex_fusion(lists, alpha=0.5)] == ["k1", "v1", "k2", "v2"]


def test_convex_alpha_one_and_zero_reduce_to_one_arms_order():
    lists = [
        RankedList("keyword", ["c", "b", "a"], scores=[9.0, 5.0, 1.0]),
        RankedList("vector", ["a", "b", "d"], scores=[0.9, 0.6, 0.3]),
    ]
    for alpha, arm in ((1.0, "vector"), (0.0, "keyword")):
        fused = convex_fusion(lists, alpha=alpha)
        ids = next(lst.ids for lst in lists if lst.arm == arm)
        assert [f.id for f in fused if f.id in ids] == ids  # the arm's own order
        assert [f.id for f in fused][:2] == ids[:2]  # ahead of the other arm's candidates, which get 0


def test_convex_variants_take_the_best_weighted_score_per_arm():
    lists = [
        RankedList("vector", ["a", "b"], scores=[0.9, 0.5]),  # a 1, b 0
        RankedList("vector", ["b", "a"], weight=0.5, scores=[0.8, 0.2]),  # b 0.5 * 1, a 0
    ]
    by_id = {f.id: f for f in convex_fusion(lists, alpha=1.0)}
    assert by_id["a"].arm_scores["vector"] == pytest.approx(1.0)
    assert by_id["b"].arm_scores["vector"] == pytest.approx(0.5)  # max(0, 0.5), not the sum
    assert by_id["b"].ranks["vector"] == 1


def test_convex_rejects_bad_alpha_and_lists_without_scores():
    with pytest.raises(ValueError):
        convex_fusion([], alpha=1.5)
    with pytest.raises(ValueError):
        convex_fusion([RankedList("vector", ["a"])])


def test_a_keyword_only_document_takes_the_vector_arms_mean_and_its_keyword_score_at_its_weight():
    """A document the embedding model cannot read: the vector arm neither lifts nor sinks it (its
    term is the arm's mean over the candidates) and its keyword evidence counts once, not twice."""
    lists = [
        RankedList("keyword", ["de1", "de2", "en1"], scores=[9.0, 5.0, 1.0]),
        RankedList("vector", ["de2", "en1", "de1"], scores=[0.9, 0.8, 0.1]),
    ]
    plain = convex_fusion(lists, alpha=0.5)
    assert [f.id for f in plain][0] == "de2"  # the weak arm puts its pick above the keyword arm's best
    fused = convex_fusion(lists, alpha=0.5, keyword_only={"de1", "de2"})
    scores = {f.id: f.score for f in fused}
    mean = (1.0 + 0.875 + 0.0) / 3  # the vector list's normalised scores
    assert scores["de1"] == pytest.approx(0.5 * mean + 0.5 * 1.0)
    assert scores["de2"] == pytest.approx(0.5 * mean + 0.5 * 0.5)
    assert scores["en1"] == pytest.approx(0.5 * 0.875)  # both arms, as without languages
    assert [f.id for f in fused] == ["de1", "de2", "en1"]
    assert {f.id: f.arm_scores["vector"] for f in fused}["de1"] == 0.0  # what the arm said, shown, not counted


def test_a_keyword_only_page_matching_one_word_does_not_outrank_the_page_both_arms_found():
    """Issue 38: an English question; a German page matches one English word ("Sync") best, the
    English page is the vector arm's first and the keyword arm's second. Scored on its keyword rank
    alone as if for both arms, the German page came first."""
    keyword = RankedList("keyword", ["de-sync", "en-sync", "en-other"], scores=[10.0, 9.0, 1.0])
    others = [f"en-{n}" for n in range(19)]  # the vector arm ranks many candidates, as a search's 100
    vector = RankedList("vector", ["en-sync", *others], scores=[0.8, *(0.5 - n / 100 for n in range(19))])
    for fused in (
        convex_fusion([keyword, vector], keyword_only={"de-sync"}),
        reciprocal_rank_fusion([keyword, vector], keyword_only={"de-sync"}, arms=("vector", "keyword")),
    ):
        assert [f.id for f in fused][:2] == ["en-sync", "de-sync"]


def test_when_every_document_is_keyword_only_hybrid_ranks_as_keyword():
    keyword = RankedList("keyword", ["a", "b", "c", "d"], scores=[4.0, 3.0, 2.0, 1.0])
    vector = RankedList("vector", ["d", "c", "x"], scores=[0.9, 0.5, 0.4])
    everything = {"a", "b", "c", "d", "x"}
    convex = convex_fusion([keyword, vector], keyword_only=everything)
    assert [f.id for f in convex] == ["a", "b", "c", "d", "x"]
    rrf = reciprocal_rank_fusion([keyword, vector], keyword_only=everything, arms=("vector", "keyword"))
    assert [f.id for f in rrf] == ["a", "b", "c", "d", "x"]
    mean = (1 / 61 + 1 / 62 + 1 / 63) / 3
    assert rrf[0].score == pytest.approx(1 / 61 + mean)


def test_the_last_keyword_match_stays_above_what_the_keyword_arm_did_not_find():
    """Issue 38: "Wohnung übergeben Hamburg" in German, a model that reads English only: every
    candidate is keyword-only, and the keyword arm's last match (normalised 0) ties on score with
    the vector arm's picks it did not find. Being found is evidence: recency must not put a newer
    unfound note above it."""
    keyword = RankedList("keyword", ["other", "wohnung"], scores=[5.0, 4.0])
    vector = RankedList("vector", ["wohnung", "new1", "new2"], scores=[0.9, 0.8, 0.7])
    everything = {"other", "wohnung", "new1", "new2"}
    fused = convex_fusion([keyword, vector], keyword_only=everything)
    facts = {"wohnung": Facts(None, 1.0), "new1": Facts(None, 9.0), "new2": Facts(None, 8.0), "other": Facts(None, 1.0)}
    assert [f.id for f in rerank(fused, facts)] == ["other", "wohnung", "new1", "new2"]


def test_rrf_keyword_only_documents_take_the_vector_lists_mean_terms():
    keyword = RankedList("keyword", ["en", "de"])
    vector = RankedList("vector", ["en", "de"])
    fused = reciprocal_rank_fusion([keyword, vector], keyword_only={"de"}, arms=("vector", "keyword"))
    mean = (1 / 61 + 1 / 62) / 2
    assert {f.id: f.score for f in fused} == {"en": pytest.approx(2 / 61), "de": pytest.approx(1 / 62 + mean)}


def test_a_note_in_another_language_than_the_question_takes_the_keyword_arms_mean():
    """Issue 40: an English question, a multilingual model. The German note is the vector arm's
    first; the keyword arm cannot match it and finds an English note on "every" alone. Not being
    found by words it could not share is no evidence against the German note."""
    keyword = RankedList("keyword", ["en-bike", "en-garden"], scores=[3.0, 1.0])
    vector = RankedList("vector", ["de-sourdough", "en-bike", "en-garden"], scores=[0.86, 0.80, 0.79])
    plain = convex_fusion([keyword, vector])
    assert plain[0].id == "en-bike"
    fused = convex_fusion([keyword, vector], vector_only={"de-sourdough"})
    scores = {f.id: f.score for f in fused}
    assert scores["de-sourdough"] == pytest.approx(0.5 * 1.0 + 0.5 * 0.5)  # the keyword list's mean, (1 + 0) / 2
    assert scores["en-bike"] == pytest.approx(0.5 * (0.01 / 0.07) + 0.5 * 1.0)
    assert fused[0].id == "de-sourdough"
    assert {f.id: f.arm_scores["keyword"] for f in fused}["de-sourdough"] is None  # what the arm said
    rrf = reciprocal_rank_fusion([keyword, vector], vector_only={"de-sourdough"}, arms=("vector", "keyword"))
    assert {f.id: f.score for f in rrf}["de-sourdough"] == pytest.approx(1 / 61 + (1 / 61 + 1 / 62) / 2)
    assert rrf[0].id == "de-sourdough"


def test_when_every_document_is_in_another_language_hybrid_ranks_as_vector():
    """XQuAD de-to-en: German questions, English paragraphs only. Shared names still reach the
    keyword arm, but it cannot judge the rest: the vector arm's order stands."""
    keyword = RankedList("keyword", ["c", "a"], scores=[5.0, 1.0])
    vector = RankedList("vector", ["a", "b", "c"], scores=[0.9, 0.8, 0.7])
    everything = {"a", "b", "c", "k"}
    for fused in (
        convex_fusion([keyword, vector], vector_only=everything),
        reciprocal_rank_fusion([keyword, vector], vector_only=everything, arms=("vector", "keyword")),
    ):
        assert [f.id for f in fused] == ["a", "b", "c"]


def test_a_candidate_only_the_arm_that_cannot_judge_it_found_has_no_evidence():
    keyword = RankedList("keyword", ["k"], scores=[5.0])
    vector = RankedList("vector", ["a"], scores=[0.9])
    fused = convex_fusion([keyword, vector], vector_only={"a", "k"})
    assert {f.id: f.score for f in fused} == {"a": pytest.approx(1.0), "k": 0.0}


def test_a_project_searched_from_by_path_boosts_the_documents_that_name_its_folder():
    """Issue 42: a note whose front matter says `project: apollo` belongs to a session in ~/code/apollo."""
    fused = [Fused("other", 1.0, {}), Fused("named", 0.95, {}), Fused("pathed", 0.95, {})]
    facts = {
        "other": Facts("/code/borealis", None),
        "named": Facts("apollo", None),
        "pathed": Facts("/code/apollo", None),
    }
    ranked = rerank(fused, facts, "/code/apollo", boost=0.1)
    assert [f.id for f in ranked] == ["named", "pathed", "other"]
    assert {f.id: f.score for f in ranked}["named"] == pytest.approx(0.95 * 1.1)
    assert [f.id for f in rerank(fused, facts, "apollo", boost=0.1)] == ["named", "other", "pathed"]
    assert [f.id for f in rerank(fused, facts, "/code/apollo-two", boost=0.1)] == ["other", "named", "pathed"]
