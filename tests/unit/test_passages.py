"""pgrecall.api.passages: which candidates are one passage, its text, and which an arm vouches for."""

from typing import NamedTuple

from pgrecall.api import passages


class Row(NamedTuple):
    document_id: int
    ordinal: int


def test_consecutive_chunks_of_a_document_are_one_passage_in_document_order():
    rows = [Row(1, 5), Row(2, 0), Row(1, 3), Row(1, 9), Row(1, 4), Row(1, 11)]
    # 4 joins 5's passage and brings 3's into it; 9 and 11 are a chunk apart: two passages.
    assert passages.groups(rows, merge=True) == [[2, 4, 0], [1], [3], [5]]
    assert passages.groups(rows, merge=False) == [[0], [1], [2], [3], [4], [5]]


def test_a_passage_holds_at_most_three_chunks_the_best_with_its_best_neighbours():
    rows = [Row(1, 5), Row(1, 4), Row(1, 6), Row(1, 7), Row(1, 3), Row(1, 8)]
    assert passages.MAX_CHUNKS == 3
    assert passages.groups(rows, merge=True) == [[1, 0, 2], [3, 5], [4]]


def test_after_k_passages_a_far_weaker_neighbour_no_longer_lengthens_one():
    rows = [Row(1, 5), Row(2, 0), Row(3, 0), Row(1, 6)]
    assert passages.groups(rows, merge=True, limit=2) == [[0], [1]]  # reading stopped at Row(3, 0)
    assert passages.groups(rows, merge=True, limit=3) == [[0, 3], [1], [2]]
    assert passages.groups(rows, merge=False, limit=2) == [[0], [1]]


def test_a_candidate_the_floor_hides_neither_shows_nor_joins():
    rows = [Row(1, 5), Row(1, 6), Row(1, 7)]
    assert passages.groups(rows, merge=True, shown=[True, False, True]) == [[0], [2]]


def test_a_joined_text_holds_each_chunks_overlap_once():
    chunks = [("First part. Shared end.", 0), ("Shared end. Second part.", 11), ("Third.", None)]
    assert passages.joined_text(chunks) == "First part. Shared end.\n\nSecond part.\n\nThird."


def test_a_passage_keeps_each_arms_best_rank_and_score():
    ranks = [{"vector": 3, "keyword": None}, {"vector": 1, "keyword": 7}]
    assert passages.best_ranks(ranks) == {"vector": 1, "keyword": 7}
    assert passages.best_arm_scores([{"vector": 0.2, "keyword": None}, None]) == {"vector": 0.2, "keyword": None}
    assert passages.best_arm_scores([None, None]) is None


def test_an_arm_vouches_by_a_real_word_or_by_similarity():
    keyword_only = {"vector": None, "keyword": 1}
    vector_only = {"vector": 1, "keyword": None}
    assert passages.vouched(keyword_only, None, keyword_words=True, min_similarity=0.47)
    assert not passages.vouched(keyword_only, None, keyword_words=False, min_similarity=0.47)  # stop words only
    assert not passages.vouched(vector_only, 0.21, keyword_words=True, min_similarity=0.47)
    assert passages.vouched(vector_only, 0.47, keyword_words=False, min_similarity=0.47)
