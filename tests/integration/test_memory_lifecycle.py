"""What a memory never forgets (issue 22): versions refuse a stale update, forget is undone,
dedupe reads the folder's notes, and nothing given comes back changed. Real service, real database."""

from __future__ import annotations

import asyncio
import os
import time

import pytest

from pgrecall import roots
from pgrecall.errors import InvalidInput
from pgrecall.memory.client import StaleVersion
from pgrecall.memory.notes import TRASH, MemoryFolderIsALink, MemoryNotes, render
from pgrecall.memory.request import remember_request
from pgrecall.worker.memory.files import MemoryFolder, new_id, now_utc, relative_path
from pgrecall.worker.memory.writer import MemoryNotFound, MemoryService
from tests.service import query

FACT = "Staging runs three replicas since the March outage."


def run(coroutine):
    return asyncio.run(coroutine)


def _indexed_paths(db_url, folder) -> list[str]:
    rows = query(
        db_url,
        "SELECT path FROM pgrecall.documents WHERE source_root = %s AND error IS NULL ORDER BY path",
        (str(folder),),
    )
    return [row[0] for row in rows]


def test_a_stale_version_is_refused_and_changes_nothing(settings, db_url, memory_folder):
    async def scenario():
        async with MemoryService(settings, db_url, memory_folder) as service:
            saved = await service.remember(remember_request(FACT, tags=["ops"]))
            read = saved.memory.version
            assert len(read) == 16 and saved.to_json()["version"] == read
            first = await service.update(saved.memory.id, text="Staging runs four replicas.", expect=read)
            assert first.memory.version != read
            for attempt in (
                service.update(saved.memory.id, text="Staging runs five replicas.", expect=read),
                service.forget(saved.memory.id, expect=read),
            ):
                with pytest.raises(StaleVersion, match="changed since it was read"):
                    await attempt
            assert service.files.read(saved.memory.id).text == "Staging runs four replicas."
            # A hand edit is a change too: the version read before it is stale.
            note = memory_folder.resolve() / first.memory.path  # renamed after its new text
            note.write_text(note.read_text().replace("four", "six"), encoding="utf-8")
            with pytest.raises(StaleVersion):
                await service.update(saved.memory.id, tags=["x"], expect=first.memory.version)
            current = service.files.read(saved.memory.id)
            assert (current.text, current.tags) == ("Staging runs six replicas.", ("ops",))
            # Without a version, as before: whatever it holds is overwritten.
            assert (await service.update(saved.memory.id, tags=["y"])).memory.tags == ("y",)
            with pytest.raises(InvalidInput, match="16 hexadecimal digits"):
                await service.update(saved.memory.id, tags=["z"], expect="not-a-version")

    run(scenario())


def test_forget_moves_to_the_trash_restore_brings_it_back_purge_deletes(settings, db_url, memory_folder, searcher):
    async def scenario():
        async with MemoryService(settings, db_url, memory_folder) as service:
            saved = await service.remember(remember_request(FACT, title="Staging size", tags=["ops"]))
            memory = saved.memory
            await service.forget(memory.id)
            root = memory_folder.resolve()
            assert not (root / memory.path).exists() and (root / TRASH / memory.path).is_file()
            assert _indexed_paths(db_url, root) == []
            assert all(hit.path != memory.path for hit in searcher.search("how many staging replicas", k=10))
            trash = service.list(forgotten=True)
            assert [(m.id, m.text, m.title) for m in trash] == [(memory.id, FACT, "Staging size")]
            assert trash[0].forgotten and service.list() == []
            with pytest.raises(MemoryNotFound):
                await service.update(memory.id, text="x")

            restored = await service.restore(memory.id)
            assert (restored.memory.id, restored.memory.path, restored.memory.text) == (memory.id, memory.path, FACT)
            assert restored.indexed and _indexed_paths(db_url, root) == [memory.path]
            assert searcher.search("how many staging replicas", k=1)[0].path == memory.path
            with pytest.raises(InvalidInput, match="is not forgotten"):
                await service.restore(memory.id)

            await service.forget(memory.id)
            await service.forget(memory.id, purge=True)  # from the trash, for good
            assert list(root.rglob("*.md")) == [] and service.list(forgotten=True) == []
            with pytest.raises(MemoryNotFound, match="no forgotten memory"):
                await service.restore(memory.id)
            other = await service.remember(remember_request("A second fact, purged at once."))
            await service.forget(other.memory.id, purge=True)
            assert list(root.rglob("*.md")) == [] and _indexed_paths(db_url, root) == []

    run(scenario())


def test_the_trash_is_purged_of_notes_forgotten_longer_ago_than_the_setting(settings, db_url, memory_folder):
    async def scenario():
        async with MemoryService(settings, db_url, memory_folder) as service:
            old = await service.remember(remember_request("Forgotten long ago."))
            recent = await service.remember(remember_request("Forgotten just now.", force=True))  # near the first one
            await service.forget(old.memory.id)
            await service.forget(recent.memory.id)
            return old.memory, recent.memory

    old, recent = run(scenario())
    trash = memory_folder.resolve() / TRASH
    long_ago = time.time() - 31 * 86400
    os.utime(trash / old.path, (long_ago, long_ago))
    assert MemoryFolder(memory_folder).purge_trash(30) == [old.path]
    assert [m.id for m in MemoryNotes(memory_folder).forgotten()] == [recent.id]
    assert MemoryFolder(memory_folder).purge_trash(30) == []


def test_dedupe_reads_the_folder_a_note_written_but_not_indexed_counts(settings, db_url, memory_folder):
    """A crash between the write and the index leaves a note the index lacks: remembering its
    text again returns it (and indexes it) instead of writing a second note."""
    files = MemoryFolder(memory_folder)
    files.ensure()
    now, memory_id = now_utc(), new_id()
    from pgrecall.memory.notes import Memory

    crashed = Memory(memory_id, relative_path(memory_id, now, None, FACT), None, FACT, (), "cli", {}, now, now)
    files.write(crashed)

    async def scenario():
        async with MemoryService(settings, db_url, memory_folder) as service:
            assert _indexed_paths(db_url, service.root) == []
            again = await service.remember(remember_request(FACT))
            assert (again.created, again.memory.id, again.indexed) == (False, memory_id, True)
            assert _indexed_paths(db_url, service.root) == [crashed.path]
            assert len(list(memory_folder.rglob("*.md"))) == 1

    run(scenario())


def test_dedupe_goes_by_the_text_a_note_holds_not_its_stale_front_matter(settings, db_url, memory_folder):
    async def scenario():
        async with MemoryService(settings, db_url, memory_folder) as service:
            saved = await service.remember(remember_request(FACT))
            note = memory_folder.resolve() / saved.memory.path
            edited = note.read_text().replace("three", "two")  # by hand: content_sha256 stays the old text's
            note.write_text(edited, encoding="utf-8")
            assert saved.memory.content_sha256 in edited
            same = await service.remember(remember_request("Staging runs two replicas since the March outage."))
            assert (same.created, same.memory.id) == (False, saved.memory.id)
            fresh = await service.remember(
                remember_request(FACT, force=True)
            )  # no note holds it any more (the door: nearly)
            assert fresh.created and fresh.memory.id != saved.memory.id
            assert len(list(memory_folder.rglob("*.md"))) == 2

    run(scenario())


@pytest.mark.parametrize("breaker", ["\u0085", "\u2028", "\u2029", "\x0b", "\x1e"])
@pytest.mark.parametrize("field", ["title", "tags", "metadata", "source"])
def test_a_line_break_yaml_would_fold_is_refused_in_one_line_fields(settings, db_url, memory_folder, field, breaker):
    value = f"Apollo{breaker}Zeta"
    arguments = {"title": value, "tags": [value], "metadata": {"owner": value}, "source": value}

    async def scenario():
        async with MemoryService(settings, db_url, memory_folder) as service:
            with pytest.raises(InvalidInput, match="must be one line"):
                await service.remember(remember_request(FACT, **{field: arguments[field]}))

    run(scenario())
    assert list(memory_folder.rglob("*.md")) == []


def test_what_is_given_comes_back_unchanged(settings, db_url, memory_folder):
    text = "Line one\u0085still line one\u2028and\u2029more\n\n# not a title\n\ttabbed: yes"
    title = "Zeta: « quoted » 'single' \"double\" #hash & *star"
    tags = ["ops: prod", "- dash", "yes", "null"]
    metadata = {"owner": "no", "ticket": "0123", "ratio": 1.5, "flag": True, "empty": ""}

    async def scenario():
        async with MemoryService(settings, db_url, memory_folder) as service:
            saved = await service.remember(remember_request(text, title=title, tags=tags, metadata=metadata))
            return saved.memory

    memory = run(scenario())
    read = MemoryNotes(memory_folder).read(memory.id)
    assert (read.text, read.title, list(read.tags), read.metadata) == (text, title, tags, metadata)
    assert read.version == memory.version and render(read) == render(memory)


def test_a_memory_folder_replaced_by_a_link_is_refused_never_followed(settings, db_url, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "private.md").write_text("# Private\n\nNot a memory.", encoding="utf-8")
    home = tmp_path / "home"
    home.mkdir()
    (home / "memories").symlink_to(elsewhere, target_is_directory=True)
    folder = roots.memory_folder(None, home)
    assert folder == home.resolve() / "memories" and folder.is_symlink()  # not its target
    with pytest.raises(MemoryFolderIsALink, match="is a symbolic link"):
        MemoryService(settings, db_url, folder)
    with pytest.raises(MemoryFolderIsALink):
        list(MemoryNotes(folder).memories())
    assert sorted(p.name for p in elsewhere.iterdir()) == ["private.md"]
