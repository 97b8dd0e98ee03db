"""A memory's history (which versions count) and the import's parsing, as pure functions."""

from __future__ import annotations

import json

import pytest

from pgrecall.errors import InvalidInput
from pgrecall.memory.export import EXPORT_FIELDS, export_line
from pgrecall.memory.notes import Memory
from pgrecall.memory.version_history import FORGOTTEN, GONE, LIVE, State, Version, plan, version_number
from pgrecall.worker.memory.importer import markdown_record, records_of


def version(n: int, event: str, content: bytes) -> Version:
    return Version(n, event, "2026-01-01T00:00:00Z", content)


REMEMBERED = [version(1, "remember", b"one")]
UPDATED = [*REMEMBERED, version(2, "update", b"two")]


@pytest.mark.parametrize(
    ("versions", "state", "action"),
    [
        (UPDATED, State(LIVE, b"two"), "ok"),
        # The update's version was written, then the process died before the note changed.
        (UPDATED, State(LIVE, b"one"), "drop"),
        # remember's version written, the note never: nothing of it exists.
        (REMEMBERED, State(GONE, None), "drop"),
        (UPDATED, State(LIVE, b"changed by hand"), "edit"),
        ([], State(LIVE, b"a note from before history"), "edit"),
        ([*UPDATED, version(3, "forget", b"two")], State(FORGOTTEN, b"two"), "ok"),
        # forget's version written, the note not yet moved into the trash.
        ([*UPDATED, version(3, "forget", b"two")], State(LIVE, b"two"), "drop"),
        ([*UPDATED, version(3, "forget", b"two"), version(4, "restore", b"two")], State(FORGOTTEN, b"two"), "drop"),
        (UPDATED, State(LIVE, None), "ok"),  # unreadable: nothing to compare
        (UPDATED, State(FORGOTTEN, b"edited in the trash"), "ok"),  # only live notes' edits are versions
    ],
)
def test_plan_says_what_the_versions_lack(versions, state, action):
    assert plan(versions, state) == action


def test_a_version_number_is_a_positive_integer():
    assert version_number(None) is None
    assert version_number("3") == 3 and version_number(2) == 2
    for wrong in (0, -1, "x", 1.5, True, "1e3"):
        with pytest.raises(InvalidInput, match="a version is a number"):
            version_number(wrong)


BASIC_MEMORY_NOTE = """---
title: Coffee Brewing Methods
type: note
permalink: coffee/coffee-brewing-methods
tags:
- coffee
- '#brewing'
---

# Coffee Brewing Methods

## Observations
- [method] Pour over gives a cleaner cup #technique
- [tip] Water at 94 C extracts best

## Relations
- relates_to [[Coffee Bean Origins]]
"""


def test_a_basic_memory_note_keeps_title_tags_type_permalink_and_its_observations_as_text():
    record = markdown_record(BASIC_MEMORY_NOTE, "coffee.md")
    assert record.title == "Coffee Brewing Methods"
    assert record.tags == ("coffee", "brewing")
    assert record.metadata == {"type": "note", "permalink": "coffee/coffee-brewing-methods"}
    assert record.text.startswith("## Observations\n- [method] Pour over gives a cleaner cup #technique")
    assert record.text.endswith("- relates_to [[Coffee Bean Origins]]")
    assert record.id is None and record.source == "import"


def test_a_plain_markdown_file_is_its_text_with_its_heading_as_title():
    record = markdown_record("# Deploys\n\nDeploys go out on Tuesdays.\n", "deploys.md")
    assert (record.title, record.text, record.tags, record.metadata) == (
        "Deploys",
        "Deploys go out on Tuesdays.",
        (),
        {},
    )
    untitled = markdown_record("Just a line.\n", "line.md")
    assert (untitled.title, untitled.text) == (None, "Just a line.")
    assert markdown_record("---\ntags: ops, staging\n---\nStaging.\n", "t.md").tags == ("ops", "staging")


def test_an_export_line_carries_every_field_and_reads_back_as_the_same_record(tmp_path):
    memory = Memory(
        id="0123456789ab",
        path="2026/01/x.md",
        title="T",
        text="Some text\nover two lines",
        tags=("a", "b"),
        source="cli",
        metadata={"project": "apollo", "n": 3},
        created="2026-01-02T03:04:05Z",
        updated="2026-01-03T03:04:05Z",
    )
    entry = json.loads(export_line(memory))
    assert entry == {
        "id": "0123456789ab",
        "title": "T",
        "text": "Some text\nover two lines",
        "tags": ["a", "b"],
        "source": "cli",
        "metadata": {"project": "apollo", "n": 3},
        "created": "2026-01-02T03:04:05Z",
        "updated": "2026-01-03T03:04:05Z",
        "project": "apollo",
    }
    assert tuple(entry) == EXPORT_FIELDS
    exported = tmp_path / "out.jsonl"
    exported.write_text(export_line(memory) + "\n\nnot json\n[1]\n", encoding="utf-8")
    record, *failures = list(records_of(exported))
    assert (record.id, record.text, record.tags, record.metadata, record.created, record.updated) == (
        memory.id,
        memory.text,
        ["a", "b"],
        memory.metadata,
        memory.created,
        memory.updated,
    )
    assert [where for where, _ in failures] == ["out.jsonl:3", "out.jsonl:4"]


def test_a_folder_import_reads_its_markdown_files_but_no_hidden_folder(tmp_path):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.md").write_text("# A\n\nFirst.\n", encoding="utf-8")
    (tmp_path / "b.md").write_text("Second.\n", encoding="utf-8")
    (tmp_path / ".trash").mkdir()
    (tmp_path / ".trash" / "c.md").write_text("Forgotten.\n", encoding="utf-8")
    (tmp_path / "d.txt").write_text("Not Markdown.\n", encoding="utf-8")
    assert sorted(record.text for record in records_of(tmp_path)) == ["First.", "Second."]
