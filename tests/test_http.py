"""The HTTP JSON API on a real index."""

import os
import socket
import subprocess
import sys

import httpx
import psycopg
import pytest
from fastapi.testclient import TestClient

from pgrecall.api.http import create_app
from tests.notes import ERROR_CODE_NOTES, write_notes
from tests.service import wait_for


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
        ({"json": {"query": ""}}, 422, "query: String should have at least 1 character"),
        ({"json": {"query": "x" * 2001}}, 422, "query: String should have at most 2000 characters"),
        ({"json": {"query": "x", "k": 0}}, 422, "k: Input should be greater than or equal to 1"),
        ({"json": {"query": "x", "k": 101}}, 422, "k: Input should be less than or equal to 100"),
        ({"json": {"query": "x", "mode": "fuzzy"}}, 422, "mode: Input should be 'hybrid', 'vector' or 'keyword'"),
        ({"json": {"query": "x", "filters": {"owner": "me"}}}, 422, "unknown field 'owner'"),
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
        ("post", _body('{"query": "a\\ud800b"}'), "query: Input should be a valid string"),
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
    assert {"/search", "/documents/{document_id}", "/health"} <= set(schema["paths"])
    assert schema["components"]["schemas"]["SearchRequest"]["examples"]


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


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize("port", ["70000", "0", "-1"])
def test_api_command_refuses_a_port_out_of_range_in_one_line(tmp_path, port):
    env = dict(os.environ, PGRECALL_HOME=str(tmp_path), PGRECALL_LOG_FORMAT="json")
    result = subprocess.run(
        [sys.executable, "-m", "pgrecall.cli", "api", "--port", port],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1
    assert result.stderr.strip() == f"pgrecall: error: --port must be from 1 to 65535, got {port}"


def test_api_command_serves_on_loopback_and_refuses_open_binding_without_token(db_url, tmp_path):
    env = dict(os.environ, PGRECALL_DATABASE_URL=db_url, PGRECALL_HOME=str(tmp_path), PGRECALL_LOG_FORMAT="json")
    env.pop("PGRECALL_API_TOKEN", None)
    refused = subprocess.run(
        [sys.executable, "-m", "pgrecall.cli", "api", "--host", "0.0.0.0"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        "pgrecall: error: listening on 0.0.0.0 needs PGRECALL_API_TOKEN: every request must then carry it"
    )
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "pgrecall.cli", "api", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:

        def healthy():
            try:
                return httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200
            except httpx.TransportError:
                return False

        wait_for(healthy, 60, message="api up")
        assert httpx.get(f"http://127.0.0.1:{port}/search", params={"q": ""}).status_code == 422
    finally:
        server.terminate()
        server.wait(30)
