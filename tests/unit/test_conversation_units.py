"""A conversation's retrieval units (worker/adapters/conversation.py), the same for every source."""

import datetime
import json

from pgrecall.worker import adapters
from pgrecall.worker import redaction as redact
from pgrecall.worker.adapters.conversation import CONTEXT_WORDS, Message, sections

MAY_8 = datetime.datetime(2023, 5, 8, 13, 56, tzinfo=datetime.UTC)
MAY_9 = datetime.datetime(2023, 5, 9, 9, 0, tzinfo=datetime.UTC)


def _texts(messages):
    return [section.text for section in sections("Bikes", messages)]


def test_an_exchange_is_a_question_with_its_answer_after_the_message_before_it():
    messages = [
        Message("User", "My bike chain skips on the small cog.", MAY_8, opens=True),
        Message("Claude", "The chain is worn: measure its stretch.", MAY_8),
        Message("User", "How often should I replace it?", MAY_8, opens=True),
        Message("Claude", "Every 3,000 km or so,", MAY_8),
        Message("Claude", "sooner in the rain.", MAY_8),
    ]
    assert {section.heading for section in sections("Bikes", messages)} == {"Bikes"}
    assert _texts(messages) == [
        "[8 May 2023] User: My bike chain skips on the small cog.\n\nClaude: The chain is worn: measure its stretch.",
        "[8 May 2023] Claude: The chain is worn: measure its stretch.\n\n"
        "User: How often should I replace it?\n\nClaude: Every 3,000 km or so,\n\nClaude: sooner in the rain.",
    ]


def test_the_date_is_written_where_it_changes_and_not_without_a_time():
    messages = [
        Message("Ada", "See you tomorrow.", MAY_8, opens=True),
        Message("Ben", "Morning! The dough rose.", MAY_9),
        Message("Ada", "No time on this one.", None, opens=True),
    ]
    assert _texts(messages) == [
        "[8 May 2023] Ada: See you tomorrow.\n\n[9 May 2023] Ben: Morning! The dough rose.",
        "[9 May 2023] Ben: Morning! The dough rose.\n\nAda: No time on this one.",
    ]


def test_a_long_message_before_is_cut_to_its_last_paragraphs_or_words_and_empty_messages_are_left_out():
    long_paragraph = " ".join(f"w{n}" for n in range(CONTEXT_WORDS + 10))
    messages = [
        Message("Claude", f"{long_paragraph}\n\nShort last paragraph.", opens=False),
        Message("User", "   ", opens=True),
        Message("User", "Next question?", opens=True),
        Message("Claude", long_paragraph),
        Message("User", "And then?", opens=True),
    ]
    first, second, third = _texts(messages)
    assert first == f"Claude: {long_paragraph}\n\nShort last paragraph."  # a reply without a question
    assert second == "Claude: … Short last paragraph.\n\nUser: Next question?\n\nClaude: " + long_paragraph
    last_words = " ".join(f"w{n}" for n in range(10, CONTEXT_WORDS + 10))
    assert third == f"Claude: … {last_words}\n\nUser: And then?"


def test_a_conversation_without_text_has_no_units():
    assert sections("Empty", [Message("User", "", opens=True)]) == []


def test_a_secret_in_the_message_before_an_exchange_is_redacted_in_both_and_counted_once():
    token = "ghp_" + "4LwLYg8atHXKvsk2wkW4jgQzw7k2BNy1DF43"
    messages = [
        {"uuid": "m1", "sender": "human", "text": "Which token do I use?"},
        {"uuid": "m2", "sender": "assistant", "text": f"Use {token} for now."},
        {"uuid": "m3", "sender": "human", "text": "And where does it go?"},
    ]
    export = [{"uuid": "c1", "name": "Tokens", "chat_messages": messages}]
    (document,) = adapters.parse("conversations.json", json.dumps(export).encode()).documents
    redacted = redact.redact_document(document)
    assert redacted.redactions == {"github token": 1}
    assert [token in section.text for section in redacted.sections] == [False, False]
    assert all("Use [redacted" in section.text for section in redacted.sections)


def test_a_units_context_is_marked_as_a_repeat_so_a_passage_of_two_units_shows_it_once():
    from pgrecall.api.passages import joined_text
    from pgrecall.worker.chunk import chunk_sections

    messages = [
        Message("User", "My bike chain skips on the small cog.", MAY_8, opens=True),
        Message("Claude", "The chain is worn:\n\nmeasure its stretch.", MAY_8),
        Message("User", "How often should I replace it?", MAY_8, opens=True),
        Message("Claude", "Every 3,000 km or so.", MAY_8),
    ]
    first, second = chunk_sections(
        sections("Bikes", messages), lambda texts: [len(t.split()) for t in texts], max_tokens=200
    )
    assert first.fresh_from == 0
    # The context (the reply before, two paragraphs) is the repeat; the exchange is what is fresh.
    assert second.text[: second.fresh_from] == "[8 May 2023] Claude: The chain is worn:\n\nmeasure its stretch.\n\n"
    assert second.text[second.fresh_from :] == "User: How often should I replace it?\n\nClaude: Every 3,000 km or so."
    passage = joined_text([(first.text, first.fresh_from), (second.text, second.fresh_from)])
    assert passage.count("measure its stretch") == 1 and passage.endswith("Every 3,000 km or so.")
    # The keyword arm counts a conversation's unit whole, its context too (Chunk.keyword_text).
    assert "measure its stretch" in second.keyword_text(with_heading=False, whole=True)
    assert "measure its stretch" not in second.keyword_text(with_heading=False)


def test_the_date_is_in_words_whatever_the_locale():
    from pgrecall.worker.adapters.conversation import spoken_date

    assert spoken_date(datetime.datetime(2024, 12, 1, tzinfo=datetime.UTC)) == "1 December 2024"
