"""A memory's history and its export/import (issue 22, items 4 and 6): real service, real database."""

from __future__ import annotations

import asyncio
import json
import shutil
import stat
import time

import pytest

from pgrecall.memory.client import MemoryNotFound
from pgrecall.memory.export import export_lines
from pgrecall.memory.notes import folder_of, render
from pgrecall.memory.request import remember_request
from pgrecall.memory.version_history import HISTORY, history, recorded_versions
from pgrecall.worker.memory.files import MemoryFolder
from pgrecall.worker.memory.importer import import_path
from pgrecall.worker.memory.writer import MemoryService

FACT = "Staging runs three replicas since the March outage."
NEW_FACT = "Staging runs four replicas since the May load test."


def run(coroutine):
    return asyncio.run(coroutine)


def events(folder, memory_id) -> list[tuple[int, str, str]]:
    return [(version.n, version.event, version.memory(memory_id).text) for version in history(folder, memory_id)]


def test_every_change_is_a_version_and_restore_brings_an_old_one_back(settings, db_url, tmp_path, searcher):
    folder = tmp_path / "memories"

    async def scenario():
        async with MemoryService(settings, db_url, folder) as service:
            saved = await service.remember(remember_request(FACT, tags=["ops"]))
            memory_id = saved.memory.id
            await service.update(memory_id, text=NEW_FACT)
            await service.forget(memory_id)
            restored = await service.restore(memory_id)
            assert events(folder, memory_id) == [
                (1, "remember", FACT),
                (2, "update", NEW_FACT),
                (3, "forget", NEW_FACT),
                (4, "restore", NEW_FACT),
            ]
            # Each version is the note as its change left it, byte for byte.
            assert history(folder, memory_id)[-1].content == (folder / restored.memory.path).read_bytes()
            assert history(folder, memory_id)[-1].hash == restored.memory.version  # what every read returns
            await service.update(memory_id, tags=["ops", "staging"])

            back = await service.restore(memory_id, version=1)
            # The note keeps the path it has (the update renamed it after NEW_FACT).
            assert (back.memory.text, back.memory.path, back.indexed) == (FACT, restored.memory.path, True)
            assert service.files.read(memory_id).text == FACT
            assert [n_event[:2] for n_event in events(folder, memory_id)][-2:] == [(5, "update"), (6, "restore")]
            assert searcher.search("how many staging replicas", k=1)[0].path == back.memory.path
            # A version of a forgotten memory comes back from the trash, and leaves none there.
            await service.forget(memory_id)
            again = await service.restore(memory_id, version="2")
            assert again.memory.text == NEW_FACT and service.files.read_forgotten(memory_id) is None
            with pytest.raises(MemoryNotFound, match="has no version 99"):
                await service.restore(memory_id, version=99)
            return memory_id

    run(scenario())


def test_history_is_private_hidden_from_the_index_and_purged_with_its_memory(settings, db_url, tmp_path, index):
    folder = tmp_path / "memories"

    async def scenario():
        async with MemoryService(settings, db_url, folder) as service:
            saved = await service.remember(remember_request(FACT))
            await service.update(saved.memory.id, text=NEW_FACT)
            return saved.memory.id

    memory_id = run(scenario())
    root = folder.resolve()
    for path in (root / HISTORY, root / HISTORY / memory_id):
        assert stat.S_IMODE(path.stat().st_mode) == 0o700
    files = list((root / HISTORY / memory_id).iterdir())
    assert len(files) == 2 and all(stat.S_IMODE(path.stat().st_mode) == 0o600 for path in files)
    # Indexing the whole memory folder finds the note, never a version.
    index(root)
    from tests.service import query

    paths = [
        row[0] for row in query(db_url, "SELECT path FROM pgrecall.documents WHERE source_root = %s", (str(root),))
    ]
    assert paths and not any(HISTORY in path for path in paths)

    async def purge():
        async with MemoryService(settings, db_url, folder) as service:
            await service.forget(memory_id, purge=True)

    run(purge())
    assert not (root / HISTORY / memory_id).exists()
    with pytest.raises(MemoryNotFound):
        history(folder, memory_id)

    async def forget_another():
        async with MemoryService(settings, db_url, folder) as service:
            other = await service.remember(remember_request(NEW_FACT + " Twice."))
            await service.forget(other.memory.id)
            return other.memory.id

    other_id = run(forget_another())
    assert len(recorded_versions(root, other_id)) == 2
    MemoryFolder(folder).purge_trash(days=1, now=time.time() + 2 * 86400)  # the service's purge, two days on
    assert not (root / HISTORY / other_id).exists()


def test_a_hand_edit_the_worker_indexes_is_recorded_as_an_edit(settings, db_url, index):
    folder = folder_of(settings)  # the memory folder the worker's jobs know as the memory root

    async def remember():
        async with MemoryService(settings, db_url, folder) as service:
            return (await service.remember(remember_request(FACT))).memory

    memory = run(remember())
    note = folder.resolve() / memory.path
    note.write_text(note.read_text(encoding="utf-8").replace("three", "five"), encoding="utf-8")
    # Before any worker saw it, history shows it as the next version, not yet recorded.
    pending = history(folder, memory.id)[-1]
    assert (pending.event, pending.recorded) == ("edit", False)
    index(folder.resolve())  # the real queue and workers, as the service's reconciliation runs them
    recorded = recorded_versions(folder.resolve(), memory.id)
    assert [(version.n, version.event) for version in recorded] == [(1, "remember"), (2, "edit")]
    assert recorded[-1].content == note.read_bytes()
    index(folder.resolve())  # seen again, unchanged: no new version
    assert len(recorded_versions(folder.resolve(), memory.id)) == 2


def test_export_wipe_import_export_again_is_equal_and_a_second_import_changes_nothing(settings, db_url, tmp_path):
    folder = tmp_path / "memories"
    exported = tmp_path / "memories.jsonl"

    async def fill():
        async with MemoryService(settings, db_url, folder) as service:
            await service.remember(
                remember_request(FACT, title="Staging size", tags=["ops", "staging"], metadata={"project": "apollo"})
            )
            second = await service.remember(
                remember_request("Deploys go out on Tuesdays.", metadata={"weight": 2, "pinned": True})
            )
            await service.update(second.memory.id, text="Deploys go out on Tuesdays and Thursdays.")
            await service.remember(
                remember_request("Line one\nline two: ünïcode, \u00e9 and a tab\there.", source="mcp")
            )

    run(fill())
    first = export_lines(folder)
    assert len(first) == 3
    exported.write_text("".join(line + "\n" for line in first), encoding="utf-8")
    notes_before = _notes_by_id(folder)

    async def wipe():
        async with MemoryService(settings, db_url, folder) as service:
            for memory in service.list(limit=100):
                await service.forget(memory.id, purge=True)
            assert service.list(limit=100) == []

    run(wipe())
    shutil.rmtree(folder / HISTORY, ignore_errors=True)

    async def load():
        async with MemoryService(settings, db_url, folder) as service:
            return await import_path(service, exported), await import_path(service, exported)

    once, twice = run(load())
    assert (len(once.added), once.unchanged, once.failed) == (3, [], [])
    assert (twice.added, len(twice.unchanged), twice.conflicts, twice.failed) == ([], 3, [], [])
    assert export_lines(folder) == first
    assert _notes_by_id(folder) == notes_before  # the same notes, to the byte: times, front matter
    entry = json.loads(first[0])
    assert [version.event for version in history(folder, entry["id"])] == ["remember"]


def _notes_by_id(folder) -> dict[str, bytes]:
    return {path.name[-15:-3]: path.read_bytes() for path in folder.glob("[0-9]*/*/*.md")}


def test_an_import_of_an_id_holding_another_text_leaves_it_alone(settings, db_url, tmp_path):
    folder = tmp_path / "memories"

    async def scenario():
        async with MemoryService(settings, db_url, folder) as service:
            saved = await service.remember(remember_request(FACT))
            line = json.loads(export_lines(folder)[0])
            changed = tmp_path / "changed.jsonl"
            changed.write_text(json.dumps({**line, "text": NEW_FACT}) + "\n", encoding="utf-8")
            summary = await import_path(service, changed)
            assert summary.conflicts == [saved.memory.id] and summary.added == []
            assert service.files.read(saved.memory.id).text == FACT
            await service.forget(saved.memory.id)
            assert (await import_path(service, changed)).forgotten == [saved.memory.id]

    run(scenario())


def test_basic_memory_notes_and_a_plain_folder_are_imported_as_memories(settings, db_url, tmp_path, searcher):
    source = tmp_path / "basic-memory"
    (source / "coffee").mkdir(parents=True)
    (source / "coffee" / "brewing.md").write_text(
        "---\ntitle: Coffee Brewing Methods\ntype: note\npermalink: coffee/coffee-brewing-methods\n"
        "tags:\n- coffee\n---\n\n# Coffee Brewing Methods\n\n## Observations\n"
        "- [method] Pour over gives a cleaner cup than the French press #technique\n\n"
        "## Relations\n- relates_to [[Coffee Bean Origins]]\n",
        encoding="utf-8",
    )
    (source / "plain.md").write_text("# Backups\n\nBackups run nightly at 02:00 to the NAS.\n", encoding="utf-8")
    (source / ".obsidian").mkdir()
    (source / ".obsidian" / "workspace.md").write_text("not a note", encoding="utf-8")
    folder = tmp_path / "memories"

    async def scenario():
        async with MemoryService(settings, db_url, folder) as service:
            first = await import_path(service, source)
            second = await import_path(service, source)
            return first, second, service.list(limit=10)

    first, second, listed = run(scenario())
    assert (len(first.added), first.failed) == (2, []) and (second.added, len(second.unchanged)) == ([], 2)
    by_title = {memory.title: memory for memory in listed}
    coffee = by_title["Coffee Brewing Methods"]
    assert coffee.tags == ("coffee",) and coffee.source == "import"
    assert coffee.metadata == {"type": "note", "permalink": "coffee/coffee-brewing-methods"}
    assert "- relates_to [[Coffee Bean Origins]]" in coffee.text
    assert by_title["Backups"].text == "Backups run nightly at 02:00 to the NAS."
    assert searcher.search("when do backups run", k=1)[0].path == by_title["Backups"].path


def test_a_note_from_before_history_gets_its_first_version_at_its_first_change(settings, db_url, tmp_path):
    folder = tmp_path / "memories"

    async def scenario():
        async with MemoryService(settings, db_url, folder) as service:
            saved = await service.remember(remember_request(FACT))
            shutil.rmtree(folder.resolve() / HISTORY)  # as a note written by an older pgrecall
            await service.update(saved.memory.id, text=NEW_FACT)
            return saved.memory

    memory = run(scenario())
    assert events(folder, memory.id) == [(1, "edit", FACT), (2, "update", NEW_FACT)]
    assert history(folder, memory.id)[0].content == render(memory).encode("utf-8")


@pytest.mark.parametrize("from_folder", [True, False], ids=["history-from-the-folder", "history-from-the-client"])
def test_history_and_restore_of_a_version_over_http(settings, db_url, tmp_path, searcher, from_folder):
    from fastapi.testclient import TestClient

    from pgrecall.api.http import HistoryOut, create_app
    from pgrecall.api.startup import Ready
    from pgrecall.worker.memory.writer import MemoryClient

    folder = tmp_path / "memories"
    with MemoryClient(settings, db_url, folder) as memories:
        app = create_app(searcher, memories=Ready(memories), memory_folder=folder if from_folder else None)
        client = TestClient(app)
        memory = client.post("/memories", json={"text": FACT}).json()
        client.patch(f"/memories/{memory['id']}", json={"text": NEW_FACT})
        answer = client.get(f"/memories/{memory['id']}/history")
        assert answer.status_code == 200, answer.text
        versions = answer.json()["versions"]
        assert list(answer.json()) == list(HistoryOut.model_fields)
        assert [(v["n"], v["event"], v["text"]) for v in versions] == [(1, "remember", FACT), (2, "update", NEW_FACT)]
        assert versions[0]["version"] == memory["version"]
        back = client.post(f"/memories/{memory['id']}/restore", params={"version": 1})
        assert back.status_code == 200 and back.json()["text"] == FACT
        assert client.post(f"/memories/{memory['id']}/restore", params={"version": 7}).status_code == 404
        assert client.post(f"/memories/{memory['id']}/restore", params={"version": 0}).status_code == 422
        assert client.get("/memories/0123456789ab/history").status_code == 404
        assert client.get("/memories/..%2F..%2Fetc/history").status_code == 404


def test_export_and_import_over_http(settings, db_url, tmp_path, searcher):
    from fastapi.testclient import TestClient

    from pgrecall.api.http import ImportOut, create_app
    from pgrecall.api.startup import Ready
    from pgrecall.worker.memory.writer import MemoryClient

    with (
        MemoryClient(settings, db_url, tmp_path / "one") as one,
        MemoryClient(settings, db_url, tmp_path / "two") as two,
    ):
        source = TestClient(create_app(searcher, memories=Ready(one), memory_folder=tmp_path / "one"))
        target = TestClient(create_app(searcher, memories=Ready(two), memory_folder=tmp_path / "two"))
        source.post("/memories", json={"text": FACT, "tags": ["ops"], "project": "apollo"})
        source.post("/memories", json={"text": "Deploys go out on Tuesdays."})
        exported = source.get("/memories/export")
        assert exported.status_code == 200 and exported.headers["content-type"].startswith("application/x-ndjson")
        assert exported.text == "".join(f"{line}\n" for line in export_lines(tmp_path / "one"))
        body = exported.text + "{broken\n"
        first = target.post("/memories/import", content=body.encode())
        assert first.status_code == 200, first.text
        assert list(first.json()) == list(ImportOut.model_fields)
        assert (len(first.json()["added"]), first.json()["failed"][0]["where"]) == (2, "body:3")
        again = target.post("/memories/import", content=exported.text.encode()).json()
        assert (again["added"], len(again["unchanged"])) == ([], 2)
        assert target.get("/memories/export").text == exported.text
        assert target.post("/memories/import", content=b"\xff\xfe").status_code == 400
        read_only = TestClient(
            create_app(searcher, memories=Ready(two), read_only=True, memory_folder=tmp_path / "two")
        )
        assert read_only.post("/memories/import", content=exported.text.encode()).status_code == 403
