import json

import pytest

from pgrecall.errors import UnsupportedFile
from pgrecall.worker import adapters
from pgrecall.worker.adapters import ParseError, claude, markdown


def test_front_matter_becomes_metadata_and_title():
    doc = markdown.parse("x.md", "---\ntitle: Hello\ntags: [a, b]\ndate: 2024-05-01\n---\n# H1\n\ntext\n", "h")
    assert doc.title == "Hello"
    assert doc.metadata == {"title": "Hello", "tags": ["a", "b"], "date": "2024-05-01"}
    assert doc.sections[0].heading == "# H1"


def test_title_falls_back_to_first_h1_then_file_name():
    assert markdown.parse("x.md", "intro\n\n# First\n\nbody", "h").title == "First"
    assert markdown.parse("dir/my-note.md", "no headings", "h").title == "my-note"


def test_heading_levels_nest_and_pop():
    doc = markdown.parse("x.md", "# A\n\na\n\n## B\n\nb\n\n### C\n\nc\n\n## D\n\nd\n", "h")
    assert [s.heading for s in doc.sections] == ["# A", "# A > ## B", "# A > ## B > ### C", "# A > ## D"]


def test_invalid_front_matter_is_a_parse_error():
    with pytest.raises(ParseError, match="front matter"):
        adapters.parse("x.md", b"---\ntitle: [unclosed\n---\nbody\n")


def test_binary_and_invalid_utf8_and_unknown_types_are_refused():
    with pytest.raises(UnsupportedFile, match="binary"):
        adapters.parse("x.md", b"\x89PNG\x00\x00data")
    with pytest.raises(ParseError, match="UTF-8"):
        adapters.parse("x.txt", b"caf\xe9 latin-1")
    with pytest.raises(UnsupportedFile, match=".png"):
        adapters.parse("x.png", b"whatever")


def test_json_that_is_not_an_export_is_unsupported():
    with pytest.raises(UnsupportedFile, match="not a Claude"):
        adapters.parse("data.json", b'{"a": 1}')
    with pytest.raises(ParseError, match="invalid JSON"):
        adapters.parse("conversations.json", b"[{")


def _conversation(uuid, name, messages):
    return {
        "uuid": uuid,
        "name": name,
        "created_at": "2025-01-01T10:00:00Z",
        "updated_at": "2025-01-01T11:00:00Z",
        "chat_messages": messages,
    }


def _message(sender, text="", blocks=None, attachments=None):
    return {
        "uuid": f"m-{sender}-{len(text)}",
        "sender": sender,
        "text": text,
        "content": blocks or [],
        "created_at": "2025-01-01T10:00:00Z",
        "attachments": attachments or [],
    }


def test_claude_export_yields_one_document_per_conversation():
    export = [
        _conversation(
            "u1",
            "Vacuum tuning",
            [_message("human", "How do I tune autovacuum?"), _message("assistant", "Lower the scale factor.")],
        ),
        _conversation(
            "u2",
            "Logs",
            [
                _message(
                    "human",
                    "",
                    blocks=[{"type": "text", "text": "Read this log"}, {"type": "tool_use", "name": "x"}],
                    attachments=[{"file_name": "app.log", "extracted_content": "ERROR E-4711 at startup"}],
                ),
            ],
        ),
    ]
    docs = adapters.parse("exports/conversations.json", json.dumps(export).encode())
    assert [d.path for d in docs] == ["exports/conversations.json#u1", "exports/conversations.json#u2"]
    assert all(d.kind == claude.KIND for d in docs)
    assert [s.heading for s in docs[0].sections] == ["Vacuum tuning > human", "Vacuum tuning > assistant"]
    assert docs[1].sections[0].text == "Read this log"
    assert docs[1].sections[1].heading == "Logs > attachment app.log"
    assert "E-4711" in docs[1].sections[1].text
    assert docs[0].metadata["conversation_uuid"] == "u1"


def test_conversation_hash_changes_only_with_that_conversation():
    one = _conversation("u1", "A", [_message("human", "hi")])
    two = _conversation("u2", "B", [_message("human", "yo")])
    before = {d.path: d.content_hash for d in claude.parse_export("c.json", json.dumps([one, two]))}
    two["chat_messages"].append(_message("assistant", "hello"))
    after = {d.path: d.content_hash for d in claude.parse_export("c.json", json.dumps([one, two]))}
    assert before["c.json#u1"] == after["c.json#u1"]
    assert before["c.json#u2"] != after["c.json#u2"]
