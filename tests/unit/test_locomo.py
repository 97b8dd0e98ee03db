"""A LoCoMo-format file read, written as claude.ai conversations, and scored (pgrecall.locomo)."""

import datetime
import json

import pytest

from pgrecall import locomo
from pgrecall.errors import InvalidInput
from pgrecall.locomo import HitText, Question, question_recall
from pgrecall.worker import adapters
from tests.support.locomo import BUBBLES, GLACIER, HARBOUR, LAMP_LONG, LAMP_SHORT, TURBINES, write_locomo


@pytest.fixture
def dataset(tmp_path):
    return locomo.load(write_locomo(tmp_path / "tiny-locomo.json"))


def test_questions_keep_their_valid_evidence_and_the_quirks_are_counted(dataset):
    assert dataset.name == "tiny-locomo"
    assert [(q.conversation, q.category, q.evidence) for q in dataset.questions] == [
        ("conv-a", 4, ("D1:2",)),
        ("conv-a", 1, ("D1:2", "D2:3")),  # "D1:2; D2:3" split, "D" skipped
        ("conv-b", 2, ("D1:1",)),  # "D:1:1" read as D1:1
        ("conv-b", 3, ("D1:2",)),
    ]
    assert vars(dataset.evidence) == {
        "ids": 5,
        "split": 1,
        "repaired": 1,
        "malformed": 1,
        "missing": 1,  # D9:9: the question has nothing left, and is skipped
        "questions_without_evidence": 2,
    }


def test_sessions_are_the_keys_holding_lists_with_their_dates(dataset):
    conversation = dataset.conversations[0]
    assert [s.number for s in conversation.sessions] == [1, 2]  # session_3 has a date and no turns
    assert conversation.sessions[0].date_time == datetime.datetime(2023, 5, 8, 13, 56, tzinfo=datetime.UTC)
    assert conversation.turns()["D2:3"].session == 2


def test_a_conversation_is_indexed_as_a_claude_export_of_one_conversation_per_session(dataset):
    export = json.dumps(locomo.claude_export(dataset.conversations[0]))
    parsed = adapters.parse("conv-a.json", export.encode())
    assert parsed.kind == "claude_export" and parsed.container
    first, second = parsed.documents
    assert first.path == "conv-a.json#conv-a-session-1" and second.path == "conv-a.json#conv-a-session-2"
    # Ada is the human: each of her turns opens an exchange, after the turn before it as context.
    assert [s.text for s in first.sections] == [
        "[8 May 2023] User: Ada: Hi Ben! How was your week?\n\n"
        f"Claude: Ben: {BUBBLES} [shared a photo of a jar of bubbling dough]",
        f"[8 May 2023] Claude: Ben: {BUBBLES} [shared a photo of a jar of bubbling dough]\n\nUser: Ada: {HARBOUR}",
    ]
    assert first.occurred_at == datetime.datetime(2023, 5, 8, 13, 56, tzinfo=datetime.UTC)
    assert second.occurred_at == datetime.datetime(2023, 6, 9, 19, 55, tzinfo=datetime.UTC)


@pytest.mark.parametrize(
    "value",
    [{"not": "a list"}, [], [{"conversation": {}}], [{"qa": []}], [{"conversation": [], "qa": []}]],
)
def test_a_file_of_another_shape_is_one_error(tmp_path, value):
    path = tmp_path / "other.json"
    path.write_text(json.dumps(value))
    with pytest.raises(InvalidInput, match="not a LoCoMo file"):
        locomo.load(path)


def test_invalid_json_is_one_error(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('[{"conversation": ')
    with pytest.raises(InvalidInput, match="invalid JSON at line 1"):
        locomo.load(path)


def test_a_turn_key_is_its_first_twelve_words_without_case_or_punctuation():
    assert locomo.turn_key("Hey Mel! Good to see you! How've you been, and how's work? Anything new?") == (
        "hey mel good to see you how ve you been and how"
    )
    assert locomo.contains("see you", locomo.words("Caroline: Good to SEE you!"))
    assert not locomo.contains("see you", locomo.words("good to see young people"))  # word boundaries
    assert not locomo.contains("", locomo.words("anything"))


TURNS = {
    "D1:1": locomo.Turn("D1:1", 1, "Ada", TURBINES),
    "D1:2": locomo.Turn("D1:2", 1, "Ben", BUBBLES),
    "D2:1": locomo.Turn("D2:1", 2, "Ada", GLACIER),
    "D3:1": locomo.Turn("D3:1", 3, "Ben", LAMP_SHORT),
}


def _hit(text, session, conversation="conv-a"):
    return HitText(text, conversation, session)


def test_recalls_at_k_hits_count_evidence_turns_and_sessions_in_the_first_k():
    question = Question("conv-a", "?", 1, ("D1:2", "D2:1", "D3:1"))
    filler = [_hit("Ada: nothing to see here", 1)] * 4
    hits = [_hit(f"Ben: {BUBBLES}", 1), *filler, _hit(f"Ada: {GLACIER}", 2)]
    recall = question_recall(question, TURNS, hits, cutoffs=(5, 10))
    assert recall["turn@5"] == pytest.approx(1 / 3) and recall["turn@10"] == pytest.approx(2 / 3)
    assert recall["session@5"] == pytest.approx(1 / 3) and recall["session@10"] == pytest.approx(2 / 3)


def test_budget_recall_counts_only_the_first_k_times_23_words_of_the_hits_texts():
    question = Question("conv-a", "?", 1, ("D1:2", "D2:1"))
    long_hit = _hit(" ".join(["word"] * 100), 1)  # 100 words of the 115 (5 x 23) budget
    # A window of two turns: the first one's key fits in the 15 words left, the second's does not.
    window = _hit(f"Ben: {BUBBLES}\nAda: {GLACIER}", 2)
    recall = question_recall(question, TURNS, [long_hit, window], cutoffs=(5, 10))
    assert recall["budget@5"] == 0.5 and recall["turn@5"] == 1.0
    assert recall["budget@10"] == 1.0


def test_passage_recall_is_the_budget_recall_of_the_passages_a_search_for_k_serves():
    question = Question("conv-a", "?", 1, ("D1:2", "D2:1"))
    hits = [_hit(" ".join(["word"] * 100), 1), _hit(f"Ben: {BUBBLES}\nAda: {GLACIER}", 2)]
    served = {5: [_hit(f"Ben: {BUBBLES}", 1)], 10: [_hit(f"Ben: {BUBBLES}", 1), _hit(f"Ada: {GLACIER}", 2)]}
    recall = question_recall(question, TURNS, hits, cutoffs=(5, 10), served=served)
    assert (recall["budget@5"], recall["passage@5"]) == (0.5, 0.5)
    assert recall["passage@10"] == 1.0
    assert "passage@5" not in question_recall(question, TURNS, hits, cutoffs=(5,))


def test_hits_of_another_conversation_take_their_place_and_words_but_never_match():
    question = Question("conv-b", "?", 3, ("D3:1",))
    other = _hit(LAMP_LONG, 3, conversation="conv-a")  # holds D3:1's key, but is conv-a's
    assert locomo.contains(locomo.turn_key(LAMP_SHORT), locomo.words(other.text))
    own = _hit(f"Ben: {LAMP_SHORT}", 3, conversation="conv-b")
    recall = question_recall(question, TURNS, [other] * 8 + [own], cutoffs=(5, 10))  # 8 x 16 words > 5 x 23
    assert (recall["turn@5"], recall["budget@5"], recall["session@5"]) == (0.0, 0.0, 0.0)
    assert (recall["turn@10"], recall["budget@10"], recall["session@10"]) == (1.0, 1.0, 1.0)
    unknown = question_recall(question, TURNS, [_hit(LAMP_SHORT, None, conversation=None)], cutoffs=(5,))
    assert unknown["turn@5"] == 0.0


def test_aggregate_reports_every_question_categories_1_to_4_and_each_category():
    recalls = [{"turn@5": 1.0}, {"turn@5": 0.5}, {"turn@5": 0.0}]
    groups = locomo.aggregate([4, 1, 5], recalls)
    assert groups == {
        "all": {"questions": 3, "turn@5": 0.5},
        "1-4": {"questions": 2, "turn@5": 0.75},
        "1": {"questions": 1, "turn@5": 0.5},
        "4": {"questions": 1, "turn@5": 1.0},
        "5": {"questions": 1, "turn@5": 0.0},
    }
