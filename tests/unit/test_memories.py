"""Memories as files, and the contract every interface validates them with. No database."""

from __future__ import annotations

import dataclasses
import os
import stat

import pytest

from pgrecall import contract
from pgrecall.errors import InvalidInput
from pgrecall.memory import notes as memory_notes
from pgrecall.worker.memory import files as memories
from pgrecall.worker.memory.files import Memory, MemoryFolder


def make(folder: MemoryFolder, text="Prefer uv over pip for new projects, because locking is built in.", **fields):
    created = fields.pop("created", "2026-11-30T10:00:00Z")
    memory_id = fields.pop("id", memories.new_id())
    title = fields.pop("title", None)
    memory = Memory(
        id=memory_id,
        path=memory_notes.relative_path(memory_id, created, title, text),
        title=title,
        text=text,
        tags=fields.pop("tags", ()),
        source=fields.pop("source", None),
        metadata=fields.pop("metadata", {}),
        created=created,
        updated=fields.pop("updated", created),
    )
    folder.write(memory)
    return memory


def test_a_memory_is_written_privately_and_read_back_whole(tmp_path):
    folder = MemoryFolder(tmp_path / "memories")
    memory = make(
        folder, title="Package manager", tags=("python", "tools"), source="claude-code", metadata={"project": "apollo"}
    )
    path = folder.locate(memory.id)
    assert path is not None and path.name.startswith("2026-11-30-package-manager-")
    assert path.relative_to(folder.folder.resolve()).as_posix().startswith("2026/11/")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    for directory in (folder.folder, path.parent, path.parent.parent):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    assert folder.read(memory.id) == memory
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary file left
    text = path.read_text()
    assert text.startswith("---\nid: ") and "project: apollo" in text and "# Package manager" in text


def test_only_notes_inside_the_folder_are_found_by_id(tmp_path):
    folder = MemoryFolder(tmp_path / "memories")
    memory = make(folder)
    user_note = tmp_path / "my-own-note.md"
    user_note.write_text(memory_notes.render(memory).replace(memory.id, "aaaaaaaaaaaa"))
    link = folder.locate(memory.id).parent / "2026-11-30-x-aaaaaaaaaaaa.md"
    link.symlink_to(user_note)
    assert folder.locate("aaaaaaaaaaaa") is None  # a link, even inside the folder, is not a memory
    assert folder.delete("aaaaaaaaaaaa") is None
    assert user_note.exists()
    for hostile in ("../my-own-note", "/etc/passwd", "aaaaaaaaaaaa/../../x", "AAAAAAAAAAA", "", None, 42):
        with pytest.raises(InvalidInput, match="12 hexadecimal digits"):
            contract.memory_id(hostile)


def test_delete_and_listing(tmp_path):
    folder = MemoryFolder(tmp_path / "memories")
    old = make(folder, text="Old decision.", tags=("a",), created="2026-10-01T09:00:00Z")
    new = make(folder, text="New decision.", tags=("a", "b"), created="2026-11-20T09:00:00Z")
    (folder.folder / "2026" / "11" / "notes-by-hand.md").write_text("# not a memory\n")
    assert [m.id for m in memory_notes.select(folder.memories())] == [new.id, old.id]
    assert [m.id for m in memory_notes.select(folder.memories(), tags=("b",))] == [new.id]
    assert [m.id for m in memory_notes.select(folder.memories(), since="2026-11-01")] == [new.id]
    assert memory_notes.select(folder.memories(), limit=1) == [new]
    forgotten = folder.delete(old.id)
    assert forgotten == dataclasses.replace(old, forgotten=forgotten.forgotten) and forgotten.forgotten  # when
    assert folder.locate(old.id) is None and [m.id for m in folder.memories()] == [new.id]


@pytest.mark.parametrize(
    ("call", "value", "message"),
    [
        (contract.memory_text, "   \n ", "text is empty"),
        (contract.memory_text, "x" * (64 * 1024 + 1), "longer than 65536 bytes"),
        (contract.memory_text, "a\x00b", "NUL"),
        (contract.memory_text, 42, "must be a string"),
        (contract.memory_tags, ["ok", "two\nlines"], "one line"),
        (contract.memory_tags, ["t" * 65], "longer than 64"),
        (contract.memory_tags, "a-string", "list of strings"),
        (contract.memory_tags, [""], "empty"),
        (contract.memory_metadata, {"nested": {"a": 1}}, "flat mapping"),
        (contract.memory_metadata, {"list": [1]}, "flat mapping"),
        (contract.memory_metadata, {"n": float("nan")}, "finite"),
        (contract.memory_metadata, {"id": "x"}, "set by pgrecall"),
        (contract.memory_metadata, {"bad key": 1}, "must be a name"),
        (contract.memory_metadata, ["not", "a", "mapping"], "mapping"),
        (contract.memory_title, "two\nlines", "one line"),
    ],
)
def test_bad_memory_input_gets_one_line_naming_the_field(call, value, message):
    with pytest.raises(InvalidInput, match=message) as caught:
        call(value)
    assert "\n" not in str(caught.value)


def test_good_memory_input_is_normalised():
    assert contract.memory_text("  line one\r\nline two  ") == "line one\nline two"
    assert contract.memory_tags([" a ", "b", "a"]) == ("a", "b")
    assert contract.memory_metadata({"project": "apollo", "priority": 2, "done": False, "score": 0.5}) == {
        "project": "apollo",
        "priority": 2,
        "done": False,
        "score": 0.5,
    }
    assert contract.memory_id(" 0123456789AB ".lower()) == "0123456789ab"


def test_slug_and_digest():
    assert memory_notes.slug("Über-fast CI: use `uv`!") == "uber-fast-ci-use-uv"
    assert memory_notes.slug("!!!") == "memory"
    assert memory_notes.content_digest("a") == memory_notes.content_digest("a") != memory_notes.content_digest("b")
    assert os.path.basename(memory_notes.relative_path("0123456789ab", "2026-01-02T00:00:00Z", None, "Hi")).startswith(
        "2026-01-02-hi-0123456789ab"
    )
