"""remember's door on the real write path (model, database, folder): near-duplicates and secrets
refused, with nothing written; `force` and `allow_secret` let them through; the exact-text dedupe stays.
Through the service, the Python API (pgrecall.composition.memories) and HTTP."""

from __future__ import annotations

import asyncio

import pytest
import structlog
from fastapi.testclient import TestClient

from pgrecall.api.http import create_app
from pgrecall.api.startup import Ready
from pgrecall.memory.client import NearDuplicate, SecretInMemory
from pgrecall.memory.request import remember_request
from pgrecall.worker.memory.writer import MemoryClient, MemoryService
from tests.support.secrets import SHAPES

FACT = "Staging runs three replicas since the March outage."
PARAPHRASE = "Since the March outage, staging has been running 3 replicas."
UNRELATED = "Grandma's lentil soup uses cumin and lemon."
FIVE_REPLICAS = "Production runs five replicas since the March outage."
# Issue 38: each second text was refused as a near-duplicate of the first, and lost.
DISTINCT = [
    (
        "Meter error E-4711 means the gateway stopped reporting readings; fix by restarting the gateway.",
        "Meter error E-4712 means the meter's clock lost sync with the gateway; fix with chronyc.",
    ),
    (FACT, FIVE_REPLICAS),
    (
        "Sample QZ3-B003 from the Lyon line failed the humidity test in week 12.",
        "Sample QZ3-B006 from the Lyon line failed the humidity test in week 12.",
    ),
]
GITHUB_TOKEN = dict(SHAPES)["github token"]


def notes(folder) -> list:
    return sorted(folder.rglob("*.md")) if folder.exists() else []


def test_a_near_duplicate_is_refused_unsaved_and_force_saves_it(settings, db_url, memory_folder):
    async def scenario():
        async with MemoryService(settings, db_url, memory_folder) as service:
            first = await service.remember(remember_request(FACT, tags=["ops"]))
            with pytest.raises(NearDuplicate) as refused:
                await service.remember(remember_request(PARAPHRASE))
            assert refused.value.ids == [first.memory.id]
            assert refused.value.similar[0].text == FACT and refused.value.similar[0].similarity >= 0.75
            assert str(refused.value).count(first.memory.id) == 2  # named once, then in the advice
            assert f"update_memory({first.memory.id!r}, text=...)" in str(refused.value)
            assert len(notes(memory_folder)) == 1

            # The exact text still returns its memory, with or without force.
            for force in (False, True):
                again = await service.remember(remember_request(f"  {FACT}\n", force=force))
                assert (again.created, again.memory.id) == (False, first.memory.id)
            unrelated = await service.remember(remember_request(UNRELATED))
            assert unrelated.created and unrelated.indexed

            forced = await service.remember(remember_request(PARAPHRASE, force=True))
            assert forced.created and forced.indexed and forced.memory.id != first.memory.id
            assert len(notes(memory_folder)) == 3
            # A titled memory is compared as the pipeline embeds it (the title as its heading).
            with pytest.raises(NearDuplicate):
                await service.remember(
                    remember_request("Staging has run 3 replicas ever since the March outage.", title="Staging")
                )

    asyncio.run(scenario())


@pytest.mark.parametrize(("first_text", "second_text"), DISTINCT)
def test_a_distinct_fact_differing_by_a_code_or_number_is_saved_naming_the_memory_it_resembles(
    settings, db_url, memory_folder, first_text, second_text
):
    async def scenario():
        async with MemoryService(settings, db_url, memory_folder) as service:
            first = await service.remember(remember_request(first_text))
            second = await service.remember(remember_request(second_text))
            assert second.created and second.indexed and second.memory.id != first.memory.id
            assert [m.id for m in second.similar] == [first.memory.id]
            assert second.to_json()["similar"][0]["text"] == first_text
            with pytest.raises(NearDuplicate):  # a true paraphrase of the first is still refused
                await service.remember(
                    remember_request(PARAPHRASE if first_text == FACT else f"{first_text} (noted again)")
                )
            assert len(notes(memory_folder)) == 2

    asyncio.run(scenario())


def test_the_door_reads_the_note_as_it_is_now_and_forgotten_memories_do_not_count(settings, db_url, memory_folder):
    async def scenario():
        async with MemoryService(settings, db_url, memory_folder) as service:
            first = await service.remember(remember_request(FACT))
            await service.forget(first.memory.id)
            again = await service.remember(remember_request(PARAPHRASE))  # the only near memory is in the trash
            assert again.created
            with pytest.raises(NearDuplicate) as refused:
                await service.remember(remember_request(FACT))
            assert refused.value.ids == [again.memory.id] and refused.value.similar[0].text == PARAPHRASE

    asyncio.run(scenario())


def test_a_secret_is_refused_naming_its_kind_never_echoed_and_allow_secret_saves(
    settings, db_url, memory_folder, capsys
):
    token = GITHUB_TOKEN(3)
    text = f"The deploy bot's token:\n  {token}\nrotate it in May."

    async def scenario():
        async with MemoryService(settings, db_url, memory_folder) as service:
            with structlog.testing.capture_logs() as events, pytest.raises(SecretInMemory) as refused:
                await service.remember(remember_request(text))
            assert refused.value.kind == "github token"
            assert "line 2, column 3" in str(refused.value) and token not in str(refused.value)
            assert [e["event"] for e in events] == ["memory_refused"] and token not in repr(events)
            assert notes(memory_folder) == []
            with structlog.testing.capture_logs() as events:
                saved = await service.remember(remember_request(text, allow_secret=True))
            assert saved.created and token in (memory_folder / saved.memory.path).read_text()
            # Saved as asked, but its file name (which logs and listings show) is made without it.
            assert "redacted-github-token" in saved.memory.path and token.lower()[:16] not in saved.memory.path
            assert token not in repr(events)
            with pytest.raises(SecretInMemory, match="title holds a secret"):
                await service.remember(remember_request(UNRELATED, title=f"token {token}"))
            # An update is the same door: refused, the note unchanged, unless allowed.
            clean = await service.remember(remember_request(UNRELATED))
            before = (memory_folder / clean.memory.path).read_bytes()
            with pytest.raises(SecretInMemory, match=r"github token\) at line 1, column 5"):
                await service.update(clean.memory.id, text=f"Use {token} now.")
            assert (memory_folder / clean.memory.path).read_bytes() == before
            updated = await service.update(clean.memory.id, text=f"Use {token} now.", allow_secret=True)
            assert token in updated.memory.text

    asyncio.run(scenario())
    captured = capsys.readouterr()
    assert token not in captured.out + captured.err


def test_the_python_api_raises_the_typed_refusals(db_url, tmp_path, monkeypatch):
    from pgrecall.composition import memories

    monkeypatch.setenv("PGRECALL_DATABASE_URL", db_url)
    monkeypatch.setenv("PGRECALL_CONFIG", str(tmp_path / "no-config.toml"))
    folder = tmp_path / "home" / "memories"
    try:
        first = memories.remember(FACT)
        with pytest.raises(memories.NearDuplicate) as refused:
            memories.remember(PARAPHRASE)
        assert refused.value.ids == [first.memory.id]
        assert memories.remember(PARAPHRASE, force=True).created
        with pytest.raises(memories.SecretInMemory, match="github token"):
            memories.remember(f"token {GITHUB_TOKEN(4)}")
        assert memories.remember(f"token {GITHUB_TOKEN(4)}", allow_secret=True).created
        assert len(notes(folder)) == 3
    finally:
        memories.close_default_client()


def test_http_answers_409_naming_the_near_duplicates_and_422_for_a_secret(searcher, settings, db_url, memory_folder):
    with MemoryClient(settings, db_url, memory_folder) as writer:
        client = TestClient(create_app(searcher, memories=Ready(writer), memory_folder=memory_folder))
        first = client.post("/memories", json={"text": FACT})
        assert first.status_code == 201, first.text
        refused = client.post("/memories", json={"text": PARAPHRASE})
        assert refused.status_code == 409
        body = refused.json()
        assert [m["id"] for m in body["near_duplicates"]] == [first.json()["id"]]
        assert body["near_duplicates"][0]["text"] == FACT
        assert '"force": true' in body["error"] and f"PATCH /memories/{first.json()['id']}" in body["error"]
        assert "update_memory" not in body["error"]
        assert client.post("/memories", json={"text": FACT}).status_code == 200  # the exact text: that memory
        assert client.post("/memories", json={"text": UNRELATED}).status_code == 201
        forced = client.post("/memories", json={"text": PARAPHRASE, "force": True})
        assert forced.status_code == 201 and forced.json()["new"] and forced.json()["similar"] == []
        other_fact = client.post("/memories", json={"text": FIVE_REPLICAS})
        assert other_fact.status_code == 201, other_fact.text
        assert [m["id"] for m in other_fact.json()["similar"]][:1] == [first.json()["id"]]

        token = GITHUB_TOKEN(5)
        secret = client.post("/memories", json={"text": f"Use {token} to deploy."})
        assert secret.status_code == 422
        assert "github token" in secret.json()["error"] and token not in secret.text
        allowed = client.post("/memories", json={"text": f"Use {token} to deploy.", "allow_secret": True})
        assert allowed.status_code == 201
        memory_id = first.json()["id"]
        patched = client.patch(f"/memories/{memory_id}", json={"text": f"Staging uses {token}."})
        assert patched.status_code == 422 and "github token" in patched.json()["error"] and token not in patched.text
        note = (memory_folder / first.json()["path"]).read_text()
        assert FACT in note and token not in note
        patched = client.patch(f"/memories/{memory_id}", json={"text": f"Staging uses {token}.", "allow_secret": True})
        assert patched.status_code == 200
        assert client.post("/memories", json={"text": UNRELATED + "!", "force": "maybe"}).status_code == 422
        assert len(notes(memory_folder)) == 5


def test_the_checks_vector_is_the_one_indexed_and_the_text_is_not_embedded_twice(
    settings, db_url, memory_folder, searcher
):
    async def scenario():
        async with MemoryService(settings, db_url, memory_folder) as service:
            with structlog.testing.capture_logs() as events:
                checked = await service.remember(remember_request(FACT, title="Staging size"))
                untitled = await service.remember(remember_request("The office plants are watered on Fridays."))
                forced = await service.remember(remember_request(UNRELATED, force=True))
            return checked, untitled, forced, [e for e in events if e["event"] == "file_indexed"]

    checked, untitled, forced, indexed = asyncio.run(scenario())
    by_path = {event["path"]: event for event in indexed}
    for saved in (checked, untitled):
        assert (by_path[saved.memory.path]["chunks_embedded"], by_path[saved.memory.path]["chunks_reused"]) == (0, 1)
    assert by_path[forced.memory.path]["chunks_embedded"] == 1  # no check, no vector: embedded as any note
    hit = searcher.search("# Staging size\n\n" + FACT, k=1, mode="vector")[0]
    assert hit.path == checked.memory.path and hit.similarity > 0.99
