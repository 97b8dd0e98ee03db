"""remember / update / forget through the real write path, then the real search."""

from __future__ import annotations

import asyncio
import threading

import pytest

from pgrecall.errors import InvalidInput
from pgrecall.memory.request import remember_request
from pgrecall.worker.memory.writer import MemoryNotFound, MemoryService
from tests.service import query


def run(coroutine):
    return asyncio.run(coroutine)


def test_remember_update_forget_through_search(settings, db_url, memory_folder, searcher):
    async def scenario():
        async with MemoryService(settings, db_url, memory_folder) as service:
            saved = await service.remember(
                remember_request(
                    "We chose PostgreSQL advisory locks over Redis for the ingest queue: one less service to run.",
                    title="Queue locking decision",
                    tags=["architecture"],
                    metadata={"project": "apollo"},
                    source="test-client",
                )
            )
            assert saved.created and saved.indexed
            hits = searcher.search("why no Redis for the ingest queue?", k=3)
            assert hits[0].path == saved.memory.path and hits[0].source_root == service.root
            assert hits[0].metadata["id"] == saved.memory.id and hits[0].metadata["project"] == "apollo"

            again = await service.remember(
                remember_request(
                    "  We chose PostgreSQL advisory locks over Redis for the ingest queue: one less service to run.\n"
                )
            )
            assert (again.created, again.memory.id) == (False, saved.memory.id)

            updated = await service.update(
                saved.memory.id, text="The ingest queue moved to SQS in March for the managed retries."
            )
            assert updated.memory.created == saved.memory.created and updated.memory.path == saved.memory.path
            texts = " ".join(hit.text for hit in searcher.search("ingest queue", k=5))
            assert "SQS" in texts and "advisory locks" not in texts

            forgotten = await service.forget(saved.memory.id)
            assert forgotten.id == saved.memory.id
            assert not (memory_folder / saved.memory.path).exists()
            assert all(hit.path != saved.memory.path for hit in searcher.search("ingest queue SQS", k=10))
            with pytest.raises(MemoryNotFound):
                await service.forget(saved.memory.id)
            with pytest.raises(InvalidInput, match="12 hexadecimal"):
                await service.update("../../etc/passwd", text="x")

    run(scenario())


def test_bad_input_writes_nothing(settings, db_url, memory_folder):
    async def scenario():
        async with MemoryService(settings, db_url, memory_folder) as service:
            for bad in ({"text": "  "}, {"text": "x", "tags": ["a\nb"]}, {"text": "x", "metadata": {"a": {"b": 1}}}):
                with pytest.raises(InvalidInput):
                    await service.remember(remember_request(**bad))
            assert service.list() == []

    run(scenario())
    assert [p for p in memory_folder.rglob("*") if p.is_file()] == []


def test_sixteen_concurrent_remembers_leave_one_note_per_distinct_text(settings, db_url, memory_folder):
    texts = [f"Fact number {n % 5}: the staging cluster runs {n % 5 + 2} replicas." for n in range(16)]
    results: list = []
    errors: list = []

    def remember_in_own_service(chunk):
        async def scenario():
            async with MemoryService(settings, db_url, memory_folder) as service:
                # force: these texts are near-duplicates of each other; the exact-text lock is under test
                return await asyncio.gather(*(service.remember(remember_request(text, force=True)) for text in chunk))

        try:
            results.extend(asyncio.run(scenario()))
        except Exception as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=remember_in_own_service, args=(texts[n::4],)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert errors == []
    assert len(results) == 16
    notes = [p for p in memory_folder.rglob("*.md")]
    assert len(notes) == 5 == len({saved.memory.id for saved in results})
    assert sum(saved.created for saved in results) == 5
    rows = query(
        db_url, "SELECT count(*) FROM pgrecall.documents WHERE source_root = %s", (str(memory_folder.resolve()),)
    )
    assert rows == [(5,)]


def test_a_memory_without_a_title_is_shown_by_its_first_sentence_and_its_file_name_follows_its_text(
    settings, db_url, memory_folder, searcher
):
    async def scenario():
        async with MemoryService(settings, db_url, memory_folder) as service:
            saved = await service.remember(
                remember_request("Staging runs three replicas since the March outage. It broke twice.")
            )
            hit = searcher.search("how many staging replicas?", k=1)[0]
            assert hit.path == saved.memory.path
            assert hit.title == "Staging runs three replicas since the March outage."  # not the file name
            updated = await service.update(saved.memory.id, text="Staging runs four replicas since the May outage.")
            return saved, updated

    saved, updated = run(scenario())
    assert updated.memory.id == saved.memory.id and updated.memory.created == saved.memory.created
    assert "staging-runs-four-replicas" in updated.memory.path and updated.memory.path.endswith(
        f"-{saved.memory.id}.md"
    )
    assert not (memory_folder / saved.memory.path).exists()
    note = (memory_folder / updated.memory.path).read_text()
    assert "four replicas" in note and f"id: {saved.memory.id}" in note
    assert [p.name for p in memory_folder.rglob("*.md")] == [updated.memory.path.rpartition("/")[2]]
    paths = query(db_url, "SELECT path, title FROM pgrecall.documents WHERE path LIKE %s", (f"%{saved.memory.id}.md",))
    assert paths == [(updated.memory.path, "Staging runs four replicas since the May outage.")]  # old path gone
    hit = searcher.search("how many staging replicas?", k=1)[0]
    assert hit.path == updated.memory.path and "four replicas" in hit.text
