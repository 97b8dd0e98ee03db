"""The memories of the web page: list and show them, and remember, edit, forget and restore from forms.

Server-rendered forms that work without JavaScript (POST, then a redirect to the page that shows
the result, so reloading never writes twice); htmx boosts them (hx-boost) where it runs. Every
write goes through the MemoryWriter the JSON API is handed (pgrecall.memory.client): this module
writes no file and no row itself. Without one, or under `--read-only`, the forms are not shown
and a POST is refused with 403.

The form routes answer only form bodies (FormRoute), so POST /memories and
POST /memories/{id}/restore of the JSON API are untouched. A write from another site never
reaches them: web.CrossSiteWriteGuard refuses it first (Origin/Sec-Fetch-Site), and the token's
cookie is SameSite=Strict. An edit and a forget carry the `version` the page showed: when the
memory changed since, nothing is written and the page shows its current text beside what the
person typed.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import structlog
from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.routing import APIRoute
from starlette.datastructures import Headers
from starlette.routing import Match
from starlette.types import Scope

from pgrecall import contract
from pgrecall.api.startup import Lazy
from pgrecall.api.web import PageRoute, page, render_markdown
from pgrecall.errors import InvalidInput, PgRecallError, first_line
from pgrecall.memory.client import MemoryWriter, NearDuplicate, StaleVersion
from pgrecall.memory.notes import Memory, MemoryNotes, MemoryUnreadable, read_memories
from pgrecall.memory.request import remember_request

FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")
SOURCE = "web"  # who wrote a memory from the page (its front matter's `source`)
READ_ONLY_REASON = "this page is read-only (pgrecall api --read-only): memories cannot be written here"
# What a redirect's `done=` says on the next page: fixed texts, so nothing of the URL is shown.
DONE = {
    "remembered": "Remembered.",
    "same": "This text was already remembered: here it is.",
    "saved": "Saved.",
    "restored": "Brought back from the trash.",
}
UNINDEXED = "The note is written; the index follows once the database answers."

log = structlog.get_logger(__name__)


class FormRoute(APIRoute):
    """A route that answers only a form's body (a page's POST); JSON and bodiless requests pass on
    to the JSON API's route of the same path."""

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        if scope["type"] == "http" and not Headers(scope=scope).get("content-type", "").startswith(FORM_TYPES):
            return Match.NONE, {}
        return super().matches(scope)


def tag_list(field: str) -> list[str]:
    """The tags of the form's one-line field: comma-separated, blanks dropped."""
    return [tag.strip() for tag in field.split(",") if tag.strip()]


def shown(memory: Memory) -> dict[str, Any]:
    """A memory as the page shows it: with `shown_title`, its title or its text's first words."""
    return {**memory.to_json(), "shown_title": memory.shown_title}


def similar_ids(field: str) -> list[str]:
    """The ids of a redirect's `similar=`: memory ids only, so nothing else of the URL is shown."""
    return [part for part in field.split(",") if contract.MEMORY_ID.fullmatch(part)][: contract.MAX_LIST]


def _status_of(exc: PgRecallError) -> int:
    if isinstance(exc, contract.NotFound):
        return 404
    if isinstance(exc, StaleVersion | NearDuplicate):
        return 409
    if isinstance(exc, InvalidInput):
        return 422
    if isinstance(exc, MemoryUnreadable):
        return 403
    return 503  # the memory client's start, the database


def router(
    memories: Lazy[MemoryWriter] | None, read_only: bool, memory_folder: Path | None, common: dict[str, Any]
) -> APIRouter:
    """GET /memories and /memories/{id} (HTML); the forms' POST /memories, /memories/{id},
    /memories/{id}/forget and /memories/{id}/restore."""
    router = APIRouter(include_in_schema=False)
    can_write = memories is not None and not read_only
    common = {**common, "can_write": can_write, "max_title": contract.MAX_TITLE_CHARS}

    def all_memories() -> list[dict[str, Any]]:
        if memory_folder is None:
            return []
        return [shown(memory) for memory in read_memories(memory_folder, limit=contract.MAX_LIST)]

    def forgotten_one(memory_id: str) -> Memory | None:
        if memory_folder is None or not contract.MEMORY_ID.fullmatch(memory_id):
            return None
        try:
            return MemoryNotes(memory_folder).read_forgotten(memory_id)
        except MemoryUnreadable:
            return None  # the flash then names no title; the trash's note is the CLI's to look at

    def list_page(
        request: Request,
        tag: str = "",
        project: str = "",
        forgotten: str = "",
        form: dict[str, str] | None = None,
        error: str | None = None,
        status_code: int = 200,
        near: list[dict[str, Any]] | None = None,
    ) -> HTMLResponse:
        every = all_memories()
        tags = Counter(t for memory in every for t in memory["tags"])
        projects = Counter(
            str(memory["metadata"].get("project")) for memory in every if memory["metadata"].get("project")
        )
        chosen = [
            memory
            for memory in every
            if (not tag or tag in memory["tags"]) and (not project or str(memory["metadata"].get("project")) == project)
        ]
        context = {
            **common,
            "memories": chosen,
            "total": len(every),
            "tags": tags.most_common(),
            "projects": projects.most_common(),
            "tag": tag,
            "project": project,
            "forgotten": forgotten_one(forgotten) if forgotten else None,
            "form": form or {"text": "", "title": "", "tags": "", "project": ""},
            "error": error,
            "near": near or [],  # a near-duplicate refused: the memories that say it, and "Save anyway"
        }
        return page(request, "memories.html", context, status_code)

    def memories_page(request: Request, tag: str = "", project: str = "", forgotten: str = "") -> HTMLResponse:
        return list_page(request, tag, project, forgotten)

    router.add_api_route("/memories", memories_page, methods=["GET"], route_class_override=PageRoute)

    def one_page(
        request: Request,
        memory: dict[str, Any],
        done: str = "",
        form: dict[str, str] | None = None,
        error: str | None = None,
        stale: bool = False,
        status_code: int = 200,
        similar: list[dict[str, Any]] | None = None,
    ) -> HTMLResponse:
        in_form = form or {"text": memory["text"], "title": memory["title"] or "", "tags": ", ".join(memory["tags"])}
        context = {
            **common,
            "memory": memory,
            "html": render_markdown(memory["text"]),
            "done": DONE.get(done.removesuffix("-unindexed")),
            "unindexed": UNINDEXED if done.endswith("-unindexed") else None,
            "form": in_form,
            "error": error,
            "stale": stale,
            "similar": similar or [],  # memories it resembles though it states another fact
        }
        return page(request, "memory.html", context, status_code)

    def missing(request: Request, what: str, status_code: int = 404) -> HTMLResponse:
        return page(request, "missing.html", {**common, "what": what}, status_code)

    def read_one(memory_id: str) -> Memory | None:
        if memory_folder is None or not contract.MEMORY_ID.fullmatch(memory_id):
            return None
        return MemoryNotes(memory_folder).read(memory_id)

    def memory_page(request: Request, memory_id: str, done: str = "", similar: str = "") -> HTMLResponse:
        try:
            found = read_one(memory_id)
            alike = [read_one(other) for other in similar_ids(similar)]
        except MemoryUnreadable as exc:
            return missing(request, str(exc), 403)
        if found is None:
            return missing(request, f"no memory {memory_id}")
        return one_page(request, shown(found), done, similar=[shown(memory) for memory in alike if memory])

    # A page route as well: a JSON GET /memories/{id} of the API, should it come, is not shadowed.
    router.add_api_route("/memories/{memory_id}", memory_page, methods=["GET"], route_class_override=PageRoute)

    def writer() -> MemoryWriter:
        assert memories is not None  # the routes below ask can_write first
        return memories.get()  # a Startup opens the client on the first write

    def refused(request: Request) -> HTMLResponse:
        return missing(request, READ_ONLY_REASON, 403)

    def done_at(memory_id: str, done: str, indexed: bool, similar: tuple[str, ...] = ()) -> RedirectResponse:
        query = urlencode(
            {"done": done if indexed else f"{done}-unindexed"} | ({"similar": ",".join(similar)} if similar else {})
        )
        return RedirectResponse(f"/memories/{memory_id}?{query}", status_code=303)

    def remember(
        request: Request,
        text: str = Form(""),
        title: str = Form(""),
        tags: str = Form(""),
        project: str = Form(""),
        force: str = Form(""),
    ) -> Response:
        form = {"text": text, "title": title, "tags": tags, "project": project}
        if not can_write:
            return refused(request)
        try:
            saved = writer().remember(
                remember_request(
                    text,
                    title=title or None,
                    tags=tag_list(tags),
                    metadata=contract.with_project(None, project or None),
                    source=SOURCE,
                    force=force == "true",  # the form's "Save anyway" button, shown beside a near-duplicate
                )
            )
        except NearDuplicate as exc:
            near = [{**m.to_json(), "similarity": round(m.similarity, 2)} for m in exc.similar]
            return list_page(request, form=form, error=exc.describe(exc.similar, "web"), status_code=409, near=near)
        except PgRecallError as exc:
            return list_page(request, form=form, error=first_line(exc), status_code=_status_of(exc))
        log.info("web_memory_remembered", id=saved.memory.id, new=saved.created)
        similar = tuple(m.id for m in saved.similar)
        return done_at(saved.memory.id, "remembered" if saved.created else "same", saved.indexed, similar)

    router.add_api_route("/memories", remember, methods=["POST"], route_class_override=FormRoute)

    def edit(
        request: Request,
        memory_id: str,
        version: str = Form(""),
        text: str = Form(""),
        title: str = Form(""),
        tags: str = Form(""),
    ) -> Response:
        form = {"text": text, "title": title, "tags": tags}
        if not can_write:
            return refused(request)
        try:
            saved = writer().update(memory_id, text=text, title=title, tags=tag_list(tags), expect=version or None)
        except PgRecallError as exc:
            return failed(request, memory_id, exc, form)
        log.info("web_memory_updated", id=saved.memory.id)
        return done_at(saved.memory.id, "saved", saved.indexed)

    router.add_api_route("/memories/{memory_id}", edit, methods=["POST"], route_class_override=FormRoute)

    def failed(
        request: Request, memory_id: str, exc: PgRecallError, form: dict[str, str] | None = None
    ) -> HTMLResponse:
        """The memory as it is now, with what the person typed (`form`, an edit) kept in the form,
        and the current version in it: saving again then applies the edit."""
        try:
            current = read_one(memory_id)
        except MemoryUnreadable as unreadable:
            return missing(request, str(unreadable), 403)
        if current is None:
            return missing(request, first_line(exc), _status_of(exc))
        stale = isinstance(exc, StaleVersion)
        if not stale:
            message = first_line(exc)
        elif form:
            message = (
                "This memory changed since you opened it: nothing was saved. Its text now is shown above; "
                "your edit is still in the form below. Save again to replace the text now with yours."
            )
        else:
            message = "This memory changed since you opened it: it was not forgotten. Its text now is shown above."
        return one_page(request, shown(current), form=form, error=message, stale=stale, status_code=_status_of(exc))

    def forget(request: Request, memory_id: str, version: str = Form("")) -> Response:
        if not can_write:
            return refused(request)
        try:
            forgotten = writer().forget(memory_id, expect=version or None)
        except PgRecallError as exc:
            return failed(request, memory_id, exc)
        log.info("web_memory_forgotten", id=forgotten.id)
        return RedirectResponse("/memories?" + urlencode({"forgotten": forgotten.id}), status_code=303)

    router.add_api_route("/memories/{memory_id}/forget", forget, methods=["POST"], route_class_override=FormRoute)

    def restore(request: Request, memory_id: str) -> Response:
        if not can_write:
            return refused(request)
        try:
            saved = writer().restore(memory_id)
        except PgRecallError as exc:
            return missing(request, first_line(exc), _status_of(exc))
        log.info("web_memory_restored", id=saved.memory.id)
        return done_at(saved.memory.id, "restored", saved.indexed)

    router.add_api_route("/memories/{memory_id}/restore", restore, methods=["POST"], route_class_override=FormRoute)

    return router
