"""The HTTP JSON API on a real index."""

import psycopg
import pytest
from fastapi.testclient import TestClient

from pgrecall import contract
from pgrecall.api.http import READ_ONLY_REASON, SavedOut, create_app
from pgrecall.api.startup import Ready
from pgrecall.memory.request import remember_request
from tests.notes import ERROR_CODE_NOTES, write_notes


@pytest.fixture
def client(index, searcher, tmp_path):
    index(write_notes(tmp_path / "notes", ERROR_CODE_NOTES))
    return TestClient(create_app(searcher))


def test_post_and_get_search(client):
    response = client.post("/search", json={"query": "E-4711", "k": 2})
    assert response.status_code == 200
    hits = response.json()["hits"]
    assert hits[0]["path"] == "incidents/e4711.md"
    assert set(hits[0]["ranks"]) == {"vector", "keyword"}
    response = client.get("/search", params={"q": "tomatoes", "k": 1, "mode": "keyword"})
    assert response.json()["hits"][0]["path"] == "notes/garden.md"
    filtered = client.post("/search", json={"query": "export", "filters": {"path_prefix": "notes/"}})
    assert all(h["path"].startswith("notes/") for h in filtered.json()["hits"])


def test_a_search_in_another_embedding_space_is_a_409_naming_both(client, db_url, searcher):
    import psycopg

    other = "another-model@sha256:000000000000/384/torch"
    with psycopg.connect(db_url, autocommit=True) as conn:
        conn.execute("UPDATE pgrecall.documents SET embedding_space = %s WHERE chunk_count > 0", (other,))
    response = client.post("/search", json={"query": "export job", "k": 2})
    assert response.status_code == 409
    error = response.json()["error"]
    assert other in error and searcher.embedder.space in error and "\n" not in error
    keyword = client.post("/search", json={"query": "E-4711", "k": 1, "mode": "keyword"})
    assert keyword.status_code == 200 and keyword.json()["hits"][0]["path"] == "incidents/e4711.md"


def test_fusion_in_the_body_and_the_query_string(client):
    for fusion, convex in (("convex", True), ("rrf", False)):
        posted = client.post("/search", json={"query": "E-4711", "k": 2, "fusion": fusion}).json()["hits"]
        got = client.get("/search", params={"q": "E-4711", "k": 2, "fusion": fusion}).json()["hits"]
        assert posted == got and posted[0]["path"] == "incidents/e4711.md", fusion
        assert (posted[0]["arm_scores"] is not None) == convex, fusion
    convex_hit = client.post("/search", json={"query": "E-4711", "k": 1, "fusion": "convex"}).json()["hits"][0]
    assert convex_hit["arm_scores"]["keyword"] == 1.0
    refused = client.get("/search", params={"q": "x", "fusion": "max"})
    assert refused.status_code == 422 and refused.json() == {"error": "unknown fusion 'max'; use one of rrf, convex"}


def test_document_and_health(client):
    document_id = client.post("/search", json={"query": "E-4711", "k": 1}).json()["hits"][0]["document_id"]
    document = client.get(f"/documents/{document_id}").json()
    assert document["path"] == "incidents/e4711.md" and "E-4711" in document["chunks"][0]["text"]
    assert client.get("/documents/999999").status_code == 404
    health = client.get("/health").json()
    assert health["database"] == "ok" and health["documents"] == 4 and health["queue_depth"] == 0
    assert health["last_indexed_at"]


@pytest.mark.parametrize(
    ("request_kwargs", "status", "reason"),
    [
        # The contract's messages (pgrecall.contract), the same on every interface.
        ({"json": {"query": ""}}, 422, "the query is empty"),
        ({"json": {"query": "x" * 2001}}, 422, "the query is longer than 2000 characters"),
        ({"json": {"query": "x", "k": 0}}, 422, "k must be an integer from 1 to 100"),
        ({"json": {"query": "x", "k": 101}}, 422, "k must be an integer from 1 to 100"),
        ({"json": {"query": "x", "k": "many"}}, 422, "k: Input should be a valid integer"),
        ({"json": {"query": "x", "mode": "fuzzy"}}, 422, "unknown mode 'fuzzy'; use one of hybrid, vector, keyword"),
        ({"json": {"query": "x", "filters": {"owner": "me"}}}, 422, "unknown filter field 'owner'; known: source_root"),
        (
            {"json": {"query": "x", "owner": "me"}},
            422,
            "unknown field 'owner'; known: query, k, mode, filters, enrich, fusion",
        ),
        ({"json": {"query": "x", "fusion": "max"}}, 422, "unknown fusion 'max'; use one of rrf, convex"),
        ({"json": {"query": "x", "filters": {"modified_since": "soon"}}}, 422, "modified_since must be an ISO date"),
        ({"content": b"{not json", "headers": {"content-type": "application/json"}}, 400, "malformed JSON body"),
    ],
)
def test_bad_input_gets_a_4xx_with_one_line(client, request_kwargs, status, reason):
    response = client.post("/search", **request_kwargs)
    assert response.status_code == status
    error = response.json()["error"]
    assert reason in error and "\n" not in error


def _body(filters_or_query: str) -> dict:
    return {"content": filters_or_query.encode(), "headers": {"content-type": "application/json"}}


# Each used to answer 500 Internal Server Error (PostgreSQL refused the value), but for the
# nesting bound, which is new.
@pytest.mark.parametrize(
    ("method", "request_kwargs", "reason"),
    [
        ("post", _body('{"query": "x", "filters": {"metadata": {"a": NaN}}}'), "filter metadata.a must hold finite"),
        ("post", _body('{"query": "x", "filters": {"metadata": {"a": 1e999}}}'), "filter metadata.a must hold finite"),
        (
            "post",
            _body('{"query": "x", "filters": {"metadata": {"a": "\\u0000"}}}'),
            "filter metadata.a must not contain a NUL",
        ),
        ("post", _body('{"query": "a\\u0000b"}'), "the query must not contain a NUL"),
        ("post", _body('{"query": "a\\ud800b"}'), "the query is not valid Unicode (an unpaired surrogate)"),
        ("post", _body('{"query": "x", "filters": {"path_prefix": "\\u0000"}}'), "filter path_prefix must not"),
        ("post", _body('{"query": "x", "filters": {"kind": "\\u0000"}}'), "filter kind must not contain a NUL"),
        ("post", _body('{"query": "x", "filters": {"root": "\\u0000"}}'), "filter root must not contain a NUL"),
        ("post", _body('{"query": "x", "filters": {"source_root": "/\\u0000"}}'), "filter source_root must not"),
        (
            "post",
            _body('{"query": "x", "filters": {"metadata": ' + '{"a": ' * 40 + "1" + "}" * 42),
            "filter metadata is nested deeper",
        ),
        ("get", {"params": {"q": "a\x00b"}}, "the query must not contain a NUL"),
        ("get", {"params": {"q": "x", "path_prefix": "\x00"}}, "filter path_prefix must not contain a NUL"),
        ("get", {"params": {"q": "x", "kind": "\x00"}}, "filter kind must not contain a NUL"),
        ("get", {"params": {"q": "x", "root": "\x00"}}, "filter root must not contain a NUL"),
    ],
)
def test_values_postgres_cannot_take_get_a_422_naming_the_field(searcher, method, request_kwargs, reason):
    client = TestClient(create_app(searcher))
    response = getattr(client, method)("/search", **request_kwargs)
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert reason in error and "\n" not in error


def test_openapi_schema_has_examples(client):
    schema = client.get("/openapi.json").json()
    assert {"/search", "/documents/{document_id}", "/health", "/memories", "/memories/{memory_id}"} <= set(
        schema["paths"]
    )
    components = schema["components"]["schemas"]
    assert components["SearchRequest"]["examples"] and components["RememberBody"]["examples"]
    assert components["SearchRequest"]["properties"]["k"]["maximum"] == contract.MAX_K
    # Generated from the contract: a field added there appears here.
    assert list(components["Hit"]["properties"]) == list(contract.HIT_FIELDS)
    assert set(components["Filters"]["properties"]) == set(contract.FILTER_FIELDS)
    assert {"post", "get"} <= set(schema["paths"]["/memories"])
    assert {"patch", "delete"} <= set(schema["paths"]["/memories/{memory_id}"])


def test_token_is_required_when_configured(index, searcher, tmp_path):
    guarded = TestClient(create_app(searcher, token="s3cret"))
    assert guarded.get("/health").status_code == 401
    assert guarded.get("/health", headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert guarded.get("/health", headers={"Authorization": "Bearer s3cret"}).status_code == 200


def test_reader_role_cannot_write_or_read_the_queue(client, searcher):
    with searcher.pool.connection() as conn:
        assert conn.execute("SELECT current_user").fetchone()[0] == "pgrecall_reader"
        conn.rollback()
        conn.read_only = False  # even outside a read-only transaction
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("DELETE FROM pgrecall.chunks")
        conn.rollback()
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("SELECT count(*) FROM procrastinate_jobs")
        conn.rollback()
        conn.read_only = True  # back to how the pool hands it out


# --- Memories -----------------------------------------------------------------------------------

ORIGINAL = "The zorblax cache expires after 17 minutes because the upstream quota resets hourly."
UPDATED = "The zorblax cache expires after 5 minutes since the upstream quota became per minute."


def _notes(folder) -> list:
    return sorted(folder.rglob("*.md")) if folder.exists() else []


def _paths(client, query: str, mode: str = "hybrid") -> list[str]:
    response = client.post("/search", json={"query": query, "k": 10, "mode": mode})
    assert response.status_code == 200, response.text
    return [hit["path"] for hit in response.json()["hits"]]


def test_remember_search_update_forget_over_http(index, searcher, memories, memory_folder, tmp_path):
    index(write_notes(tmp_path / "notes", ERROR_CODE_NOTES))  # the memory must outrank the user's notes
    client = TestClient(create_app(searcher, memories=Ready(memories), memory_folder=memory_folder))

    created = client.post(
        "/memories",
        json={"text": ORIGINAL, "title": "Cache expiry", "tags": ["ops"], "metadata": {"project": "apollo"}},
        headers={"X-Pgrecall-Source": "deploy-bot"},
    )
    assert created.status_code == 201, created.text
    memory = created.json()
    assert memory["new"] and memory["indexed"] and memory["source"] == "deploy-bot"
    assert list(memory) == list(SavedOut.model_fields)  # the documented schema is Saved.to_json()'s shape
    assert (memory_folder / memory["path"]).is_file() and len(memory["id"]) == 12
    again = client.post("/memories", json={"text": ORIGINAL})
    assert again.status_code == 200 and again.json()["id"] == memory["id"] and not again.json()["new"]
    assert client.post("/memories", json={"text": "Another fact."}).json()["source"] == "http"

    hits = client.post("/search", json={"query": "when does the zorblax cache expire?", "k": 3}).json()["hits"]
    assert hits[0]["path"] == memory["path"] and hits[0]["source_root"] == str(memory_folder.resolve())
    assert hits[0]["metadata"]["project"] == "apollo"
    listed = client.get("/memories", params={"tag": "ops"}).json()["memories"]
    assert [m["id"] for m in listed] == [memory["id"]]

    updated = client.patch(f"/memories/{memory['id']}", json={"text": UPDATED, "expect": memory["version"]})
    assert updated.status_code == 200 and updated.json()["text"] == UPDATED
    assert updated.json()["version"] != memory["version"]
    stale = client.patch(f"/memories/{memory['id']}", json={"text": "Never.", "expect": memory["version"]})
    assert stale.status_code == 409 and "changed since it was read" in stale.json()["error"]
    stale = client.delete(f"/memories/{memory['id']}", params={"expect": memory["version"]})
    assert stale.status_code == 409 and UPDATED in (memory_folder / memory["path"]).read_text()
    assert updated.json()["title"] == "Cache expiry" and updated.json()["path"] == memory["path"]
    hits = client.post("/search", json={"query": "zorblax cache expiry", "k": 3}).json()["hits"]
    assert hits[0]["path"] == memory["path"] and "5 minutes" in hits[0]["text"] and "17" not in hits[0]["text"]
    assert memory["path"] not in _paths(client, "hourly", mode="keyword")  # a word only the old text had

    forgotten = client.delete(f"/memories/{memory['id']}")
    assert forgotten.status_code == 200 and forgotten.json()["id"] == memory["id"]
    assert forgotten.json()["text"] == UPDATED
    assert not (memory_folder / memory["path"]).exists()
    assert memory["path"] not in _paths(client, "zorblax cache expiry")
    assert memory["path"] not in _paths(client, "zorblax", mode="keyword")
    assert client.delete(f"/memories/{memory['id']}").status_code == 404
    assert [m["text"] for m in client.get("/memories").json()["memories"]] == ["Another fact."]

    # Forgetting is undone: the trash lists it, restore brings it back with its id, searchable again.
    trash = client.get("/memories", params={"forgotten": "true"}).json()["memories"]
    assert [(m["id"], m["text"]) for m in trash] == [(memory["id"], UPDATED)] and trash[0]["forgotten"]
    restored = client.post(f"/memories/{memory['id']}/restore")
    assert restored.status_code == 200 and (restored.json()["id"], restored.json()["path"]) == (
        memory["id"],
        memory["path"],
    )
    assert memory["path"] in _paths(client, "zorblax cache expiry")
    assert client.post(f"/memories/{memory['id']}/restore").status_code == 422  # not forgotten
    assert client.delete(f"/memories/{memory['id']}", params={"purge": "true"}).status_code == 200
    assert client.get("/memories", params={"forgotten": "true"}).json()["memories"] == []
    assert client.post(f"/memories/{memory['id']}/restore").status_code == 404
    assert not (memory_folder / memory["path"]).exists() and memory["path"] not in _paths(client, "zorblax")


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "reason"),
    [
        ("post", "/memories", {"text": ""}, 422, "text is empty"),
        ("post", "/memories", {"text": " \n\t "}, 422, "text is empty"),
        ("post", "/memories", {"text": "x" * (64 * 1024 + 1)}, 422, "text is longer than 65536 bytes"),
        ("post", "/memories", {"text": "é" * (32 * 1024 + 1)}, 422, "text is longer than 65536 bytes"),
        ("post", "/memories", {"text": "ok", "tags": ["a\nb"]}, 422, "tag must be one line"),
        ("post", "/memories", {"text": "ok", "tags": ["t" * 65]}, 422, "is longer than 64 characters"),
        ("post", "/memories", {"text": "ok", "metadata": {"a": {"b": 1}}}, 422, "metadata a must be a string"),
        ("post", "/memories", {"text": "ok", "metadata": {"a": [1]}}, 422, "metadata a must be a string"),
        ("post", "/memories", {"text": "ok", "metadata": ["a"]}, 422, "metadata must be a mapping"),
        ("post", "/memories", {"text": "ok", "metadata": {"id": "x"}}, 422, "metadata key 'id' is set by pgrecall"),
        ("post", "/memories", {"text": "ok", "title": "a\nb"}, 422, "title must be one line"),
        ("post", "/memories", {"text": "a\u0000b"}, 422, "text contains a NUL character"),
        ("post", "/memories", {"text": "ok", "colour": "red"}, 422, "unknown field 'colour'; known: text, title, tags"),
        ("post", "/memories", {"title": "no text"}, 422, "text: Field required"),
        ("patch", "/memories/0123456789ab", {"text": "new"}, 404, "no memory 0123456789ab"),
        ("patch", "/memories/not-an-id", {"text": "new"}, 404, "an id is 12 hexadecimal digits"),
        ("patch", "/memories/0123456789ab", {}, 422, "nothing to update"),
        ("delete", "/memories/0123456789ab", None, 404, "no memory 0123456789ab"),
        ("delete", "/memories/..%5C..%5Cnotes.md", None, 404, "an id is 12 hexadecimal digits"),
        ("delete", "/memories/..%2F..%2Fnotes.md", None, 404, "Not Found"),  # no route: a path is no id
    ],
)
def test_bad_memory_input_gets_one_line_and_writes_nothing(
    searcher, memories, memory_folder, method, path, body, status, reason
):
    client = TestClient(create_app(searcher, memories=Ready(memories), memory_folder=memory_folder))
    response = client.request(method.upper(), path, json=body)
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert reason in error and "\n" not in error
    assert _notes(memory_folder) == []


def test_memory_writes_need_the_token_when_one_is_configured(searcher, memories, memory_folder):
    guarded = TestClient(create_app(searcher, token="s3cret", memories=Ready(memories), memory_folder=memory_folder))
    for method, path, body in [
        ("POST", "/memories", {"text": "A fact."}),
        ("PATCH", "/memories/0123456789ab", {"text": "x"}),
        ("DELETE", "/memories/0123456789ab", None),
        ("GET", "/memories", None),  # reads, as today
    ]:
        for headers in ({}, {"Authorization": "Bearer wrong"}):
            response = guarded.request(method, path, json=body, headers=headers)
            assert response.status_code == 401, (method, path, response.text)
            assert response.json()["error"] == "missing or wrong bearer token"
    assert _notes(memory_folder) == []
    allowed = guarded.post("/memories", json={"text": "A fact."}, headers={"Authorization": "Bearer s3cret"})
    assert allowed.status_code == 201 and len(_notes(memory_folder)) == 1


def test_a_read_only_api_refuses_writes_with_403(searcher, memories, memory_folder):
    saved = memories.remember(remember_request("Written before the API went read-only."))
    read_only = TestClient(create_app(searcher, memories=Ready(memories), read_only=True, memory_folder=memory_folder))
    for method, path, body in [
        ("POST", "/memories", {"text": "A fact."}),
        ("PATCH", f"/memories/{saved.memory.id}", {"text": "x"}),
        ("DELETE", f"/memories/{saved.memory.id}", None),
    ]:
        response = read_only.request(method, path, json=body)
        assert response.status_code == 403, response.text
        assert response.json()["error"] == READ_ONLY_REASON
    assert [m["id"] for m in read_only.get("/memories").json()["memories"]] == [saved.memory.id]
    assert [p.name for p in _notes(memory_folder)] == [saved.memory.path.rsplit("/", 1)[-1]]
    assert (memory_folder / saved.memory.path).read_text().count("Written before") == 1


def test_a_metadata_filter_matches_a_front_matter_list(index, searcher, tmp_path):
    from tests.notes import TAGGED_NOTES

    index(write_notes(tmp_path / "tagged", TAGGED_NOTES))
    client = TestClient(create_app(searcher))
    filters = {"metadata": {"tags": "incident"}}
    hits = client.post("/search", json={"query": "replica", "k": 10, "filters": filters}).json()["hits"]
    assert sorted(h["path"] for h in hits) == ["disk.md", "failover.md"]
