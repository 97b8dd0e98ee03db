"""ChatGPT exports. tests/fixtures/chatgpt/conversations.json is written for these tests in
the shape of a real export's conversations.json (a hidden system node, custom
instructions, a regenerated answer, code run by a tool, a reasoning model's analysis,
an image beside the text)."""

import copy
import json
from pathlib import Path

import pytest

from pgrecall import kinds
from pgrecall.errors import UnsupportedFile
from pgrecall.worker import adapters
from pgrecall.worker.adapters import ParseError, chatgpt

EXPORT = Path(__file__).parents[1] / "fixtures" / "chatgpt" / "conversations.json"
FIRST = "6850a3f2-1c44-800b-9d1e-4b0c2e7f1a55"
SECOND = "6851b004-77aa-800b-a3c2-99d0e1f2a3b4"


def _export() -> list[dict]:
    return json.loads(EXPORT.read_text())


def test_one_document_per_conversation_of_its_current_branch_and_text_only():
    docs = chatgpt.parse_export("exports/conversations.json", EXPORT.read_text())
    assert [d.path for d in docs] == [f"exports/conversations.json#{FIRST}", f"exports/conversations.json#{SECOND}"]
    assert all(d.kind == kinds.CHATGPT_CONVERSATION for d in docs)
    first = docs[0]
    assert first.title == "Autovacuum on a busy table"
    # An exchange per question, after the message before it as context; each message dated and named.
    assert [(s.heading, s.text) for s in first.sections] == [
        (
            "Autovacuum on a busy table",
            "[15 June 2025] User: Why does autovacuum skip my orders table?\n\n"
            "ChatGPT: Check its storage parameters first.",
        ),
        (
            "Autovacuum on a busy table",
            "[15 June 2025] ChatGPT: Check its storage parameters first.\n\n"
            "User: It says autovacuum_enabled=false.\n\n"
            "ChatGPT: Then reset it: ALTER TABLE orders RESET (autovacuum_enabled);",
        ),
    ]
    text = json.dumps([s.text for s in first.sections])
    for left_out in ("regenerated away", "print(1)", "weighing fillfactor", "Thought for", "Be brief", "asset_pointer"):
        assert left_out not in text, left_out


def test_metadata_has_the_times_in_utc():
    first = chatgpt.parse_export("c.json", EXPORT.read_text())[0]
    assert first.metadata == {
        "conversation_id": FIRST,
        "created_at": "2025-06-15T06:18:58.648000Z",
        "updated_at": "2025-06-15T06:33:58.648000Z",
        "messages": 4,
        "model": "gpt-4o",
    }


def test_the_branch_follows_current_node_not_the_newest_child():
    export = _export()
    export[0]["current_node"] = "a1-old"
    doc = chatgpt.parse_export("c.json", json.dumps(export))[0]
    assert [s.text for s in doc.sections] == [
        "[15 June 2025] User: Why does autovacuum skip my orders table?\n\n"
        "ChatGPT: A first answer that was regenerated away.",
    ]


def test_without_current_node_the_last_leaf_ends_the_branch_and_a_parent_cycle_ends_the_walk():
    export = _export()
    del export[1]["current_node"]
    assert [s.text for s in chatgpt.parse_export("c.json", json.dumps(export))[1].sections] == [
        "[16 June 2025] User: How deep do carrot seeds go?\n\nChatGPT: About 1 cm deep, in loose soil.",
    ]
    export[1]["current_node"] = "a"
    export[1]["mapping"]["r"]["parent"] = "a"  # r -> a -> q -> r
    assert chatgpt.parse_export("c.json", json.dumps(export))[1].metadata["messages"] == 2


def test_a_conversation_hash_changes_only_with_that_conversation():
    before = {d.path: d.content_hash for d in chatgpt.parse_export("c.json", EXPORT.read_text())}
    export = _export()
    export[1]["title"] = "Seed depth, revised"
    after = {d.path: d.content_hash for d in chatgpt.parse_export("c.json", json.dumps(export))}
    assert before[f"c.json#{FIRST}"] == after[f"c.json#{FIRST}"]
    assert before[f"c.json#{SECOND}"] != after[f"c.json#{SECOND}"]


def test_fields_of_the_wrong_type_are_ignored():
    export = _export()
    conversation = copy.deepcopy(export[1])
    conversation["title"] = 7
    conversation["create_time"] = "yesterday"
    conversation["mapping"]["x"] = "not a node"
    conversation["mapping"]["q"]["message"]["content"]["parts"] = ["kept", None, 3, {"x": 1}]
    conversation["mapping"]["a"]["message"]["author"] = None
    doc = chatgpt.parse_conversation("c.json", conversation)
    assert doc.title == "Untitled conversation"
    assert doc.metadata["created_at"] is None
    assert [s.text for s in doc.sections] == ["[16 June 2025] User: kept"]


def test_a_conversation_without_an_id_is_an_error():
    export = _export()
    del export[1]["conversation_id"], export[1]["id"]
    with pytest.raises(ParseError, match="no id"):
        adapters.parse("c.json", json.dumps(export).encode())


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (_export(), True),
        ([{"mapping": {}}], True),
        ([], False),  # an empty export is taken for a Claude one
        ({"mapping": {}}, False),
        ([{"mapping": {}}, {"chat_messages": []}], False),
        ([{"uuid": "u", "chat_messages": []}], False),
        ([{"mapping": []}], False),
    ],
)
def test_looks_like_chatgpt_export(value, expected):
    assert chatgpt.looks_like_chatgpt_export(value) is expected


def test_a_json_file_is_told_apart_by_content_beside_the_claude_export():
    parsed = adapters.parse("any-name.json", EXPORT.read_bytes())
    assert (parsed.kind, parsed.container) == (kinds.CHATGPT_EXPORT, True)
    assert [d.path for d in parsed.documents] == [f"any-name.json#{FIRST}", f"any-name.json#{SECOND}"]
    claude_export = [{"uuid": "u1", "name": "A", "chat_messages": [{"sender": "human", "text": "hi"}]}]
    parsed = adapters.parse("conversations.json", json.dumps(claude_export).encode())
    assert (parsed.kind, [d.kind for d in parsed.documents]) == (kinds.CLAUDE_EXPORT, [kinds.CLAUDE_CONVERSATION])
    with pytest.raises(UnsupportedFile, match="^JSON file that is not a Claude or ChatGPT conversation export$"):
        adapters.parse("data.json", b'[{"a": 1}]')
    with pytest.raises(UnsupportedFile, match="ChatGPT"):
        chatgpt.parse_export("data.json", '{"a": 1}')


def test_an_id_listed_twice_keeps_the_later_entry():
    export = _export()
    twice = copy.deepcopy(export[1])
    twice["title"] = "Seed depth (later)"
    docs = adapters.parse("c.json", json.dumps([*export, twice]).encode()).documents
    assert [d.title for d in docs] == ["Autovacuum on a busy table", "Seed depth (later)"]
