"""The memories' forms of the web page, on a real memory client and index (no browser): remember,
edit, a stale edit refused with nothing lost, forget and undo, read-only, cross-site refused."""

import re

import pytest
from fastapi.testclient import TestClient

from pgrecall import contract
from pgrecall.api.http import create_app
from pgrecall.api.startup import Ready
from pgrecall.memory.notes import MemoryNotes, read_memories
from pgrecall.memory.request import remember_request

HTML = {"accept": "text/html,application/xhtml+xml"}
SITE = "http://127.0.0.1:8765"
FACT = "The zorblax cache expires after 17 minutes because the upstream quota resets hourly."


@pytest.fixture
def client(searcher, memories, memory_folder):
    app = create_app(searcher, memories=Ready(memories), memory_folder=memory_folder)
    return TestClient(app, base_url=SITE, follow_redirects=False)


def _notes(folder) -> list:
    return sorted(folder.rglob("*.md")) if folder.exists() else []


def _found(searcher, query: str) -> list[str]:
    return [hit.path for hit in searcher.run(contract.search_request(query, k=5, mode="keyword"))]


def _post_empty_form(client, path: str):
    """What a browser sends for a form without fields (Undo): a form's content type, no body."""
    return client.post(path, content=b"", headers={**HTML, "content-type": "application/x-www-form-urlencoded"})


def _version(page: str) -> str:
    return re.search(r'name="version" value="([0-9a-f]+)"', page).group(1)


def test_remember_from_the_form_writes_indexes_and_redirects_to_the_memory(client, searcher, memory_folder):
    form = client.get("/memories", headers=HTML)
    assert form.status_code == 200 and '<form id="remember" method="post" action="/memories"' in form.text

    posted = client.post(
        "/memories",
        data={
            "text": FACT + " <script>alert(1)</script>",
            "title": "Cache expiry",
            "tags": "ops, cache",
            "project": "apollo",
        },
        headers=HTML,
    )
    assert posted.status_code == 303
    location = posted.headers["location"]
    assert re.fullmatch(r"/memories/[0-9a-f]{12}\?done=remembered", location)
    (memory,) = read_memories(memory_folder)
    assert memory.title == "Cache expiry" and memory.tags == ("ops", "cache") and memory.source == "web"
    assert memory.metadata["project"] == "apollo" and memory.text.startswith(FACT)
    assert any(path.endswith(memory.path) for path in _found(searcher, "zorblax"))  # indexed before the redirect

    shown = client.get(location, headers=HTML).text
    assert "Remembered." in shown and "zorblax" in shown
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in shown and "<script>alert" not in shown

    again = client.post("/memories", data={"text": FACT + " <script>alert(1)</script>"}, headers=HTML)
    assert again.headers["location"] == f"/memories/{memory.id}?done=same" and len(_notes(memory_folder)) == 1


def test_a_refused_remember_keeps_what_was_typed(client, memory_folder):
    response = client.post("/memories", data={"text": "   ", "title": "Kept title", "tags": "kept-tag"}, headers=HTML)
    assert response.status_code == 422
    assert "text is empty" in response.text
    assert 'value="Kept title"' in response.text and 'value="kept-tag"' in response.text
    assert _notes(memory_folder) == []
    for path in ("/memories/not-an-id", "/memories/0123456789ab", "/memories/0123456789ab/forget"):
        missing = client.post(path, data={"text": "x", "version": "0" * 16}, headers=HTML)
        assert missing.status_code == 404 and "no memory" in missing.text, path
    assert _notes(memory_folder) == []


def test_edit_from_the_form_rewrites_text_title_and_tags(client, memories, searcher, memory_folder):
    saved = memories.remember(remember_request(FACT, title="Cache expiry", tags=["ops"]))
    page = client.get(f"/memories/{saved.memory.id}", headers=HTML).text
    assert _version(page) == saved.memory.version

    posted = client.post(
        f"/memories/{saved.memory.id}",
        data={
            "version": _version(page),
            "text": "The quux cache expires after 5 minutes.",
            "title": "",
            "tags": "cache",
        },
        headers=HTML,
    )
    assert posted.status_code == 303 and posted.headers["location"] == f"/memories/{saved.memory.id}?done=saved"
    now = MemoryNotes(memory_folder).read(saved.memory.id)
    assert now.text == "The quux cache expires after 5 minutes." and now.title is None and now.tags == ("cache",)
    assert _found(searcher, "quux") and not _found(searcher, "zorblax")
    assert "Saved." in client.get(posted.headers["location"], headers=HTML).text


def test_a_stale_edit_is_refused_and_shows_the_current_text_with_the_edit_kept(client, memories, memory_folder):
    saved = memories.remember(remember_request(FACT, title="Cache expiry"))
    read_version = _version(client.get(f"/memories/{saved.memory.id}", headers=HTML).text)
    memories.update(saved.memory.id, text="Changed meanwhile by an assistant: 9 minutes.")  # another writer

    stale = client.post(
        f"/memories/{saved.memory.id}",
        data={"version": read_version, "text": "My careful edit: 5 minutes.", "title": "Cache expiry", "tags": ""},
        headers=HTML,
    )
    assert stale.status_code == 409
    assert "changed since you opened it: nothing was saved" in stale.text
    assert "Changed meanwhile by an assistant: 9 minutes." in stale.text.split('<article class="memory">')[1]
    assert "My careful edit: 5 minutes.</textarea>" in stale.text  # nothing the person typed is lost
    current = MemoryNotes(memory_folder).read(saved.memory.id)
    assert current.text == "Changed meanwhile by an assistant: 9 minutes."
    assert _version(stale.text) == current.version  # saving again applies the edit over the text now

    retried = client.post(
        f"/memories/{saved.memory.id}",
        data={"version": _version(stale.text), "text": "My careful edit: 5 minutes.", "title": "Cache expiry"},
        headers=HTML,
    )
    assert retried.status_code == 303
    assert MemoryNotes(memory_folder).read(saved.memory.id).text == "My careful edit: 5 minutes."


def test_forget_then_undo_brings_the_memory_back_with_its_id(client, memories, searcher, memory_folder):
    saved = memories.remember(remember_request(FACT, title="Cache expiry"))
    version = _version(client.get(f"/memories/{saved.memory.id}", headers=HTML).text)

    forgot = client.post(f"/memories/{saved.memory.id}/forget", data={"version": version}, headers=HTML)
    assert forgot.status_code == 303 and forgot.headers["location"] == f"/memories?forgotten={saved.memory.id}"
    assert read_memories(memory_folder) == [] and not _found(searcher, "zorblax")
    flash = client.get(forgot.headers["location"], headers=HTML).text
    assert "Forgotten: <strong>Cache expiry</strong>" in flash
    assert f'action="/memories/{saved.memory.id}/restore"' in flash and ">Undo</button>" in flash

    undone = _post_empty_form(client, f"/memories/{saved.memory.id}/restore")
    assert undone.status_code == 303 and undone.headers["location"] == f"/memories/{saved.memory.id}?done=restored"
    assert [m.id for m in read_memories(memory_folder)] == [saved.memory.id]
    assert _found(searcher, "zorblax")
    assert "Brought back from the trash." in client.get(undone.headers["location"], headers=HTML).text


def test_a_stale_forget_is_refused_and_forgets_nothing(client, memories, memory_folder):
    saved = memories.remember(remember_request(FACT))
    version = _version(client.get(f"/memories/{saved.memory.id}", headers=HTML).text)
    memories.update(saved.memory.id, tags=["changed"])
    refused = client.post(f"/memories/{saved.memory.id}/forget", data={"version": version}, headers=HTML)
    assert refused.status_code == 409 and "it was not forgotten" in refused.text
    assert [m.id for m in read_memories(memory_folder)] == [saved.memory.id]


def test_read_only_hides_the_forms_and_refuses_their_posts(searcher, memories, memory_folder):
    saved = memories.remember(remember_request(FACT))
    read_only = TestClient(
        create_app(searcher, memories=Ready(memories), read_only=True, memory_folder=memory_folder),
        base_url=SITE,
        follow_redirects=False,
    )
    listed = read_only.get("/memories", headers=HTML).text
    shown = read_only.get(f"/memories/{saved.memory.id}", headers=HTML).text
    assert "<form" not in listed.split("<main>")[1] and "<form" not in shown.split("<main>")[1]
    for path, data in [
        ("/memories", {"text": "Planted."}),
        (f"/memories/{saved.memory.id}", {"text": "Planted.", "version": saved.memory.version}),
        (f"/memories/{saved.memory.id}/forget", {"version": saved.memory.version}),
    ]:
        response = read_only.post(path, data=data, headers=HTML)
        assert response.status_code == 403 and "this page is read-only" in response.text, path
    undo = _post_empty_form(read_only, f"/memories/{saved.memory.id}/restore")
    assert undo.status_code == 403 and "this page is read-only" in undo.text
    assert [(m.id, m.text) for m in read_memories(memory_folder)] == [(saved.memory.id, FACT)]


@pytest.mark.parametrize("foreign", [{"origin": "http://evil.example"}, {"sec-fetch-site": "cross-site"}])
def test_a_cross_site_form_post_is_refused_and_writes_nothing(client, memories, memory_folder, foreign):
    saved = memories.remember(remember_request(FACT))
    for path, data in [
        ("/memories", {"text": "Planted by another site."}),
        (f"/memories/{saved.memory.id}", {"text": "Planted.", "version": saved.memory.version}),
        (f"/memories/{saved.memory.id}/forget", {"version": saved.memory.version}),
    ]:
        response = client.post(path, data=data, headers={**HTML, **foreign})
        assert response.status_code == 403 and "another site" in response.text, path
    assert [(m.id, m.text) for m in read_memories(memory_folder)] == [(saved.memory.id, FACT)]
    same_site = client.post("/memories", data={"text": "Typed on this page."}, headers={**HTML, "origin": SITE})
    assert same_site.status_code == 303 and len(read_memories(memory_folder)) == 2


def test_the_json_api_of_the_same_paths_is_untouched(client, memory_folder):
    created = client.post("/memories", json={"text": FACT})
    assert created.status_code == 201 and created.json()["source"] == "http"
    memory_id = created.json()["id"]
    assert client.delete(f"/memories/{memory_id}").status_code == 200
    restored = client.post(f"/memories/{memory_id}/restore")  # no body: the JSON route
    assert restored.status_code == 200 and restored.json()["id"] == memory_id


def test_with_a_token_a_form_post_without_it_goes_to_the_login_and_writes_nothing(searcher, memories, memory_folder):
    guarded = TestClient(
        create_app(searcher, token="s3cret", memories=Ready(memories), memory_folder=memory_folder),
        base_url=SITE,
        follow_redirects=False,
    )
    refused = guarded.post("/memories", data={"text": "Planted."}, headers=HTML)
    assert refused.status_code == 303 and refused.headers["location"].startswith("/login")
    assert _notes(memory_folder) == []
    guarded.post("/login", data={"token": "s3cret", "next": "/memories"})  # keeps the cookie
    allowed = guarded.post("/memories", data={"text": "Typed after the login."}, headers=HTML)
    assert allowed.status_code == 303 and len(_notes(memory_folder)) == 1


def test_a_near_duplicate_from_the_form_is_a_conflict_with_a_save_anyway_that_works(client, memory_folder):
    assert client.post("/memories", data={"text": FACT}, headers=HTML).status_code == 303
    (first,) = read_memories(memory_folder)
    paraphrase = "Because the upstream quota resets hourly, the zorblax cache expires after 17 minutes."

    refused = client.post("/memories", data={"text": paraphrase, "tags": "ops"}, headers=HTML)
    assert refused.status_code == 409  # a conflict, as the JSON API answers, not 503
    assert f'href="/memories/{first.id}"' in refused.text and "Save anyway" in refused.text
    assert 'name="force" value="true"' in refused.text and paraphrase in refused.text  # the text kept
    assert "force=true" not in refused.text and "update_memory" not in refused.text  # the page's own words
    assert len(_notes(memory_folder)) == 1

    forced = client.post("/memories", data={"text": paraphrase, "tags": "ops", "force": "true"}, headers=HTML)
    assert forced.status_code == 303 and len(_notes(memory_folder)) == 2
    assert re.fullmatch(r"/memories/[0-9a-f]{12}\?done=remembered", forced.headers["location"])


def test_a_fact_saved_beside_a_similar_one_names_it_and_an_untitled_memory_shows_its_first_sentence(
    client, memory_folder
):
    assert client.post("/memories", data={"text": FACT}, headers=HTML).status_code == 303
    (first,) = read_memories(memory_folder)
    other = "The zorblax cache expires after 45 minutes because the upstream quota resets hourly."
    saved = client.post("/memories", data={"text": other}, headers=HTML)
    assert saved.status_code == 303 and f"similar={first.id}" in saved.headers["location"]
    page = client.get(saved.headers["location"], headers=HTML).text
    assert "it resembles" in page and f'href="/memories/{first.id}"' in page
    assert "<h1>The zorblax cache expires after 45 minutes because the upstream quota resets hourly.</h1>" in page
    listing = client.get("/memories", headers=HTML).text
    assert f'<a href="/memories/{first.id}">{FACT}</a>' in listing
