import json

import pytest

from pgrecall import kinds
from pgrecall.errors import UnsupportedFile
from pgrecall.front_matter import lenient_front_matter
from pgrecall.worker import adapters
from pgrecall.worker.adapters import ParseError, claude, markdown
from pgrecall.worker.document import Section


@pytest.mark.parametrize(
    ("path", "data", "kind", "paths"),
    [
        ("notes/a.md", b"# A\n\nbody", kinds.MARKDOWN, ["notes/a.md"]),
        ("notes/A.MARKDOWN", b"# A\n\nbody", kinds.MARKDOWN, ["notes/A.MARKDOWN"]),
        ("notes/b.txt", b"plain", kinds.TEXT, ["notes/b.txt"]),
        ("notes/empty.txt", b"", kinds.TEXT, ["notes/empty.txt"]),
    ],
)
def test_a_file_of_one_document_says_its_kind_and_is_no_container(path, data, kind, paths):
    parsed = adapters.parse(path, data)
    assert (parsed.kind, parsed.container) == (kind, False)
    assert [d.path for d in parsed.documents] == paths
    assert [d.kind for d in parsed.documents] == [kind]
    assert adapters.kind_of(path) == kind


def test_an_export_is_a_container_even_when_empty_or_of_one_conversation():
    """The pipeline used to guess "container" from the documents' paths, which an empty export has none of."""
    empty = adapters.parse("c.json", b"[]")
    assert (empty.kind, empty.container, empty.documents) == (kinds.CLAUDE_EXPORT, True, [])
    one = adapters.parse("c.json", json.dumps([_conversation("u1", "A", [_message("human", "hi")])]).encode())
    assert one.container and [d.path for d in one.documents] == ["c.json#u1"]


def test_the_kind_of_a_path_comes_from_its_suffix_alone():
    assert adapters.kind_of("dir.md/note") == kinds.UNSUPPORTED
    assert adapters.kind_of("no-extension") == kinds.UNSUPPORTED
    assert adapters.kind_of("x.png") == kinds.UNSUPPORTED
    assert adapters.kind_of("Conversations.JSON") == kinds.CLAUDE_EXPORT
    assert not adapters.is_supported("x.png") and adapters.is_supported("x.txt")
    # Every kind a suffix names is one the read side knows (searchable, or a container).
    assert set(adapters.KIND_BY_SUFFIX.values()) <= set(kinds.SEARCHABLE) | adapters.CONTAINER_KINDS


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


def test_front_matter_that_is_not_yaml_is_kept_as_text_with_a_warning():
    """Obsidian still shows such a note's body; its front matter's words stay findable too."""
    text = "---\ntitle: Meeting: budget\n---\n# Budget\n\nWe cut the travel line.\n"
    (doc,) = adapters.parse("x.md", text.encode()).documents
    assert doc.metadata == {} and doc.title == "Budget"
    assert doc.sections[0].text == "---\ntitle: Meeting: budget\n---"
    assert doc.sections[1] == Section("# Budget", "We cut the travel line.")
    (warning,) = doc.warnings
    assert warning.startswith("front matter kept as text: invalid YAML front matter: ") and "\n" not in warning
    for broken in ("---\ntitle: [unclosed\n---\nbody\n", "---\n- a list\n---\nbody\n"):
        (doc,) = adapters.parse("x.md", broken.encode()).documents
        assert doc.metadata == {} and doc.sections[0].text == broken.strip() and len(doc.warnings) == 1


def test_lenient_front_matter_says_what_it_could_not_read():
    assert lenient_front_matter("---\na: 1\n---\nbody") == ({"a": 1}, "body", None)
    assert lenient_front_matter("no front matter") == ({}, "no front matter", None)
    metadata, body, problem = lenient_front_matter("---\na: [\n---\nbody")
    assert (metadata, body) == ({}, "---\na: [\n---\nbody") and problem.startswith("invalid YAML front matter")


@pytest.mark.parametrize(
    ("text", "sections"),
    [
        ("# Meeting with Bob\n", [Section("", "Meeting with Bob")]),
        ("---\ntags: [people]\n---\n# Bob\n\n## Birthday\n", [Section("", "Bob\nBirthday")]),
        ("---\ntitle: Reading list\n---\n", [Section("", "Reading list")]),
        ("---\ntags: [x]\n---\n\n", []),
        ("", []),
        ("# Title\n\nbody", [Section("# Title", "body")]),  # a note with text keeps its sections
    ],
)
def test_a_note_of_headings_alone_has_one_section_of_them(text, sections):
    assert markdown.parse("x.md", text, "h").sections == sections


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
    parsed = adapters.parse("exports/conversations.json", json.dumps(export).encode())
    assert (parsed.kind, parsed.container) == (kinds.CLAUDE_EXPORT, True)
    docs = parsed.documents
    assert [d.path for d in docs] == ["exports/conversations.json#u1", "exports/conversations.json#u2"]
    assert all(d.kind == kinds.CLAUDE_CONVERSATION for d in docs)
    # An exchange is one section: the question with its answer, each dated and named.
    assert [(s.heading, s.text) for s in docs[0].sections] == [
        ("Vacuum tuning", "[1 January 2025] User: How do I tune autovacuum?\n\nClaude: Lower the scale factor.")
    ]
    assert docs[1].sections[0].text == "[1 January 2025] User: Read this log"
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


def test_utf16_with_a_bom_and_utf8_with_a_bom_are_decoded():
    text = "# Café\n\nNotes in UTF-16."
    for data in (text.encode("utf-16"), b"\xfe\xff" + text.encode("utf-16-be"), "\ufeff".encode() + text.encode()):
        (doc,) = adapters.parse("x.md", data).documents
        assert doc.title == "Café"
        assert doc.sections[0].text == "Notes in UTF-16."


def test_a_nul_after_the_first_8_kib_is_removed_not_stored():
    data = b"# Long\n\n" + b"word " * 2000 + b"\x00tail\x00\x00"
    (doc,) = adapters.parse("x.md", data).documents
    assert "\x00" not in doc.sections[0].text
    assert doc.sections[0].text.endswith("word tail")
    with pytest.raises(UnsupportedFile, match="binary"):
        adapters.parse("x.md", b"ok" + b"\x00" + b"x" * 10_000)


def _nested_front_matter(depth):
    return ("---\nkey: " + "[" * depth + "]" * depth + "\n---\nbody\n").encode()


def test_deeply_nested_front_matter_is_kept_as_text_with_a_one_line_warning():
    for depth in (5000, 25):
        (doc,) = adapters.parse("x.md", _nested_front_matter(depth)).documents
        (warning,) = doc.warnings
        assert "nested" in warning and "\n" not in warning
        assert doc.metadata == {} and doc.sections[0].text.endswith("---\nbody")
    (doc,) = adapters.parse("x.md", _nested_front_matter(10)).documents
    assert doc.metadata["key"] is not None


ALIAS_BOMB = """---
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
---
body
"""


def test_a_yaml_alias_bomb_is_refused_not_expanded():
    assert len(ALIAS_BOMB) < 400
    (doc,) = adapters.parse("x.md", ALIAS_BOMB.encode()).documents
    assert "larger than 64 KiB" in doc.warnings[0]
    assert doc.metadata == {} and doc.sections[0].text == ALIAS_BOMB.strip()  # as written, not expanded
    (doc,) = adapters.parse("x.md", b"---\na: &x [*x]\n---\nbody\n").documents  # an alias of itself
    assert "nested deeper" in doc.warnings[0]


def test_yaml_nul_escapes_and_non_finite_numbers_become_storable_metadata():
    (doc,) = adapters.parse("x.md", b'---\ntitle: "a\\0b"\nnote: "\\0"\nratio: .nan\nbig: .inf\n---\nbody\n').documents
    assert doc.metadata == {"title": "ab", "note": "", "ratio": "nan", "big": "inf"}
    assert doc.title == "ab"
    json.dumps(doc.metadata, allow_nan=False)


def test_a_heading_line_of_spaces_does_not_backtrack():
    import threading

    # Linear, it takes milliseconds; backtracking over 200,000 spaces would take hours.
    parsed = []
    parser = threading.Thread(
        target=lambda: parsed.extend(adapters.parse("x.md", ("# a" + " " * 200_000 + "b\n\ntext").encode()).documents),
        daemon=True,
    )
    parser.start()
    parser.join(60)  # a hang guard
    (doc,) = parsed
    assert doc.title.startswith("a ") and len(doc.title) <= adapters.MAX_TITLE_CHARS


def test_claude_export_fields_of_the_wrong_type_are_ignored_not_fatal():
    export = [
        _conversation("u1", 5, [_message("human", "Number names are ignored.")]),
        _conversation("u2", "Texts", [{**_message("human"), "text": 42, "content": [{"type": "text", "text": 7}]}]),
        _conversation("u3", "Attach", [_message("human", "see file", attachments=["just a string", None, 3])]),
        _conversation("u4", "Good", [_message("human", "A normal question")]),
    ]
    docs = {d.path.split("#")[1]: d for d in adapters.parse("c.json", json.dumps(export).encode()).documents}
    assert docs["u1"].title == "Untitled conversation"
    assert docs["u1"].sections[0].text == "[1 January 2025] User: Number names are ignored."
    assert docs["u2"].sections == []
    assert [s.text for s in docs["u3"].sections] == ["[1 January 2025] User: see file"]
    assert docs["u4"].sections[0].text == "[1 January 2025] User: A normal question"


def test_claude_export_nul_and_lone_surrogates_are_removed():
    raw = json.dumps([_conversation("u1", "N\u0000ame", [_message("human", "before\u0000after \ud800 end")])])
    (doc,) = adapters.parse("c.json", raw.encode()).documents
    assert doc.title == "Name"
    assert doc.sections[0].text == "[1 January 2025] User: beforeafter \ufffd end"
    assert "\x00" not in doc.sections[0].heading


def test_deeply_nested_json_is_a_parse_error():
    with pytest.raises(ParseError, match="nested too deeply"):
        adapters.parse("c.json", b"[" * 100_000 + b"]" * 100_000)
