"""Every route of the app `pgrecall api` serves (the JSON API, the web page, FastAPI's own docs),
called through httpx (FastAPI's TestClient) on a real index and memory client.

ROUTES maps each route to the driver that calls it and checks a real answer. The test lists the
app's routes and fails on one without a driver, on a driver whose route is gone, and on a driver
whose requests never reached its route with a success (the app is wrapped so as to see which route
answered each request): a name alone in ROUTES satisfies nothing.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient
from starlette.routing import Mount, Route

from pgrecall.api.editor import parse_command
from pgrecall.api.http import create_app
from pgrecall.api.startup import Ready
from pgrecall.api.web import PageRoute
from pgrecall.claude_integration import injection_ledger
from pgrecall.cli.server_commands import status_reader
from pgrecall.settings import load_settings
from tests.notes import ERROR_CODE_NOTES, write_notes

HTML = {"accept": "text/html,application/xhtml+xml"}
FORM = {**HTML, "content-type": "application/x-www-form-urlencoded"}
PAGE_MODULES = ("pgrecall.api.web", "pgrecall.api.web_memories")
FACT = "The quokka deploy window opens on Tuesdays because Friday deploys broke on-call twice."
CORRECTED = "The quokka deploy window opens on Wednesdays since the on-call rota moved."
PAGE_FACT = "The wombat backups run at 03:00 because the network is quiet then."


def route_key(route: Any) -> str:
    """ "METHOD /path", and " (page)" for the web page's routes (some share a JSON route's path)."""
    if isinstance(route, Mount):
        return f"GET {route.path}"
    (method,) = sorted(set(route.methods) - {"HEAD"})
    page = getattr(route.endpoint, "__module__", "") in PAGE_MODULES or isinstance(route, PageRoute)
    return f"{method} {route.path}" + (" (page)" if page else "")


def listed_routes(app) -> dict[str, Any]:
    """Every route the app serves, by key, with what the request's scope names as its endpoint."""

    def walk(routes):
        for route in routes:
            included = getattr(route, "original_router", None)  # an APIRouter the app included
            if included is not None:
                yield from walk(included.routes)
            else:
                yield route

    found = {}
    for route in walk(app.routes):
        assert isinstance(route, APIRoute | Route | Mount), f"a route of a kind this test cannot name: {route!r}"
        found[route_key(route)] = route.app if isinstance(route, Mount) else route.endpoint
    return found


class Recording:
    """The app, noting the endpoint that answered each request and its status."""

    def __init__(self, app):
        self.app = app
        self.answered: list[tuple[Any, int]] = []

    async def __call__(self, scope, receive, send):
        status = []

        async def noting(message):
            if message["type"] == "http.response.start":
                status.append(message["status"])
            await send(message)

        await self.app(scope, receive, noting)
        if scope["type"] == "http":
            self.answered.append((scope.get("endpoint"), status[0] if status else 0))


class Site:
    def __init__(self, client: TestClient):
        self.client = client
        self.memory_id = ""
        self.document_id = 0


def json_ok(response, status: int = 200) -> Any:
    assert response.status_code == status, response.text
    return response.json()


def html_ok(response, status: int = 200) -> str:
    assert response.status_code == status, response.text[:400]
    assert response.headers["content-type"].startswith("text/html")
    return response.text


def openapi(site: Site) -> None:
    schema = json_ok(site.client.get("/openapi.json"))
    assert {"/search", "/recent", "/memories", "/health"} <= set(schema["paths"])


def docs(site: Site) -> None:
    assert "swagger-ui" in html_ok(site.client.get("/docs"))


def docs_redirect(site: Site) -> None:
    assert "oauth2" in html_ok(site.client.get("/docs/oauth2-redirect")).lower()


def redoc(site: Site) -> None:
    assert "redoc" in html_ok(site.client.get("/redoc")).lower()


def static(site: Site) -> None:
    response = site.client.get("/static/app.css")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/css")


def search_page(site: Site) -> None:
    assert "incidents/e4711.md" in html_ok(site.client.get("/", params={"q": "E-4711"}, headers=HTML))


def document_page(site: Site) -> None:
    page = html_ok(site.client.get(f"/documents/{site.document_id}", headers=HTML))
    assert "E-4711" in page and "incidents/e4711.md" in page


def open_in_editor(site: Site) -> None:
    response = site.client.post(f"/documents/{site.document_id}/open", data={"q": "E-4711"}, headers=HTML)
    assert response.status_code == 303 and "opened=1" in response.headers["location"], response.text[:400]


def status_page(site: Site) -> None:
    assert "notes" in html_ok(site.client.get("/status", headers=HTML))


def injection_report(site: Site) -> None:
    found = json_ok(site.client.get("/report"))
    assert (found["overall"]["injections"], found["overall"]["used"]) == (1, 1), found["overall"]
    assert found["sessions"][0]["session_id"] == "s-route"


def report_page(site: Site) -> None:
    page = html_ok(site.client.get("/report", headers=HTML))
    assert "s-route" in page and "1 of 1 (100 %)" in page


def login_page(site: Site) -> None:
    assert "This server needs no token" in html_ok(site.client.get("/login", headers=HTML))


def login(site: Site) -> None:  # no token configured: straight on to the page asked for
    response = site.client.post("/login", data={"token": "", "next": "/status"}, headers=FORM)
    assert (response.status_code, response.headers["location"]) == (303, "/status")


def post_search(site: Site) -> None:
    hits = json_ok(site.client.post("/search", json={"query": "E-4711", "k": 2}))["hits"]
    assert hits[0]["path"] == "incidents/e4711.md"
    site.document_id = hits[0]["document_id"]


def get_search(site: Site) -> None:
    hits = json_ok(site.client.get("/search", params={"q": "tomatoes", "k": 1}))["hits"]
    assert hits[0]["path"] == "notes/garden.md"


def recent(site: Site) -> None:
    documents = json_ok(site.client.get("/recent", params={"days": 30, "limit": 50}))["documents"]
    assert set(ERROR_CODE_NOTES) <= {document["path"] for document in documents}


def document(site: Site) -> None:
    found = json_ok(site.client.get(f"/documents/{site.document_id}"))
    assert found["path"] == "incidents/e4711.md" and "E-4711" in found["chunks"][0]["text"]


def health(site: Site) -> None:
    state = json_ok(site.client.get("/health"))
    assert state["database"] == "ok" and state["documents"] == len(ERROR_CODE_NOTES)


def remember(site: Site) -> None:
    saved = json_ok(site.client.post("/memories", json={"text": FACT, "tags": ["ops"]}), 201)
    assert saved["text"] == FACT and saved["indexed"]
    site.memory_id = saved["id"]


def update(site: Site) -> None:
    updated = json_ok(site.client.patch(f"/memories/{site.memory_id}", json={"text": CORRECTED}))
    assert (updated["id"], updated["text"]) == (site.memory_id, CORRECTED)


def list_memories(site: Site) -> None:
    listed = json_ok(site.client.get("/memories", params={"tag": "ops"}))["memories"]
    assert [(memory["id"], memory["text"]) for memory in listed] == [(site.memory_id, CORRECTED)]


def forget(site: Site) -> None:
    assert json_ok(site.client.delete(f"/memories/{site.memory_id}"))["id"] == site.memory_id
    assert json_ok(site.client.get("/memories", params={"tag": "ops"}))["memories"] == []


def restore(site: Site) -> None:
    restored = json_ok(site.client.post(f"/memories/{site.memory_id}/restore"))
    assert (restored["id"], restored["text"], restored["indexed"]) == (site.memory_id, CORRECTED, True)


def history(site: Site) -> None:
    versions = json_ok(site.client.get(f"/memories/{site.memory_id}/history"))["versions"]
    assert [version["event"] for version in versions] == ["remember", "update", "forget", "restore"]


def export(site: Site) -> None:
    response = site.client.get("/memories/export")
    assert response.status_code == 200 and CORRECTED in response.text
    site.export = response.text


def import_memories(site: Site) -> None:
    summary = json_ok(site.client.post("/memories/import", content=site.export.encode()))
    assert (summary["added"], summary["unchanged"]) == ([], [site.memory_id]), summary  # nothing new, nothing lost


def remember_page(site: Site) -> None:
    response = site.client.post("/memories", data={"text": PAGE_FACT, "tags": "backup"}, headers=FORM)
    assert response.status_code == 303, response.text[:400]
    site.page_memory = re.fullmatch(r"/memories/([0-9a-f]{12})\?done=remembered", response.headers["location"])[1]


def memories_page(site: Site) -> None:
    assert "wombat backups" in html_ok(site.client.get("/memories", headers=HTML))


def memory_page(site: Site) -> None:
    page = html_ok(site.client.get(f"/memories/{site.page_memory}", headers=HTML))
    assert "wombat backups" in page
    site.page_version = re.search(r'name="version" value="([0-9a-f]+)"', page)[1]


def edit_page(site: Site) -> None:
    form = {"version": site.page_version, "text": PAGE_FACT.replace("03:00", "04:00"), "tags": "backup"}
    response = site.client.post(f"/memories/{site.page_memory}", data=form, headers=FORM)
    assert response.status_code == 303 and "done=saved" in response.headers["location"], response.text[:400]
    assert "04:00" in html_ok(site.client.get(f"/memories/{site.page_memory}", headers=HTML))


def forget_page(site: Site) -> None:
    response = site.client.post(f"/memories/{site.page_memory}/forget", data={}, headers=FORM)
    assert response.status_code == 303 and f"forgotten={site.page_memory}" in response.headers["location"]


def restore_page(site: Site) -> None:
    response = site.client.post(f"/memories/{site.page_memory}/restore", content=b"", headers=FORM)
    assert response.status_code == 303 and "done=restored" in response.headers["location"], response.text[:400]


# In the order they run: the document and memory routes act on what the earlier ones found or saved.
ROUTES: dict[str, Callable[[Site], None]] = {
    "GET /openapi.json": openapi,
    "GET /docs": docs,
    "GET /docs/oauth2-redirect": docs_redirect,
    "GET /redoc": redoc,
    "GET /static": static,
    "POST /search": post_search,
    "GET /search": get_search,
    "GET /recent": recent,
    "GET /documents/{document_id}": document,
    "GET /health": health,
    "GET /report": injection_report,
    "GET / (page)": search_page,
    "GET /documents/{document_id} (page)": document_page,
    "POST /documents/{document_id}/open (page)": open_in_editor,
    "GET /status (page)": status_page,
    "GET /report (page)": report_page,
    "GET /login (page)": login_page,
    "POST /login (page)": login,
    "POST /memories": remember,
    "PATCH /memories/{memory_id}": update,
    "GET /memories": list_memories,
    "DELETE /memories/{memory_id}": forget,
    "POST /memories/{memory_id}/restore": restore,
    "GET /memories/{memory_id}/history": history,
    "GET /memories/export": export,
    "POST /memories/import": import_memories,
    "POST /memories (page)": remember_page,
    "GET /memories (page)": memories_page,
    "GET /memories/{memory_id} (page)": memory_page,
    "POST /memories/{memory_id} (page)": edit_page,
    "POST /memories/{memory_id}/forget (page)": forget_page,
    "POST /memories/{memory_id}/restore (page)": restore_page,
}


def hook_records(tmp_path) -> Path:
    """A hook's record of one injected item, and its session's transcript, where the assistant opened it."""
    folder, transcript = tmp_path / "injections", tmp_path / "s-route.jsonl"
    call = {"type": "tool_use", "id": "toolu_1", "name": "mcp__pgrecall__get_document", "input": {"id_or_path": "7"}}
    line = {"type": "assistant", "timestamp": "2026-11-22T08:00:09Z", "message": {"content": [call]}}
    transcript.write_text(json.dumps(line) + "\n", encoding="utf-8")
    item = {"document_id": 7, "memory_id": None, "title": "E-4711", "path": "/n/e4711.md", "terms": []}
    record = {"at": "2026-11-22T08:00:01+00:00", "event": "prompt", "session_id": "s-route", "prompt": 1}
    record |= {"transcript_path": str(transcript), "outcome": "injected", "tokens": 90, "seconds": 0.2}
    injection_ledger.append(folder, {**record, "cwd": "/src/app", "items": [item]})
    return folder


@pytest.fixture
def app(index, searcher, memories, memory_folder, db_url, tmp_path):
    index(write_notes(tmp_path / "notes", ERROR_CODE_NOTES))
    settings = load_settings({"PGRECALL_HOME": str(tmp_path / "home"), "PGRECALL_DATABASE_URL": db_url})
    editor = parse_command(f"{shlex.quote(sys.executable)} -c pass {{path}}:{{line}}")  # an editor that exits
    return create_app(
        searcher,
        memories=Ready(memories),
        memory_folder=memory_folder,
        status=status_reader(settings, searcher, read_only=False),
        editor_command=editor,
        injections=hook_records(tmp_path),
    )


def test_every_route_answers_through_httpx(app):
    listed = listed_routes(app)
    assert set(listed) - set(ROUTES) == set(), "a route without a driver in ROUTES"
    assert set(ROUTES) - set(listed) == set(), "a driver in ROUTES whose route the app no longer serves"
    recording = Recording(app)
    site = Site(TestClient(recording, base_url="http://127.0.0.1:8765", follow_redirects=False))
    for key, drive in ROUTES.items():
        recording.answered.clear()
        drive(site)
        statuses = [status for endpoint, status in recording.answered if endpoint is listed[key]]
        assert any(200 <= status < 400 for status in statuses), f"the driver of {key} never reached it: {statuses}"
    print(f"HTTP routes: {len(listed)} listed, {len(ROUTES)} driven through httpx")
