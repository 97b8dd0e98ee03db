"""`pgrecall api`: the search module, and the memories, over HTTP JSON (FastAPI on uvicorn).

Loopback by default. Listening on any other address requires a bearer token
(PGRECALL_API_TOKEN), and then every request must carry it. Bad input gets a
4xx with a one-line reason; nothing reaches a traceback.

Requests and hits are those of pgrecall.contract: the pydantic models here
are generated from it (a field added there appears here), and every value is
validated by the contract's functions, so the CLI, MCP and Python answer the
same input with the same message. Memory writes (POST, PATCH, DELETE /memories)
go through a memory client (pgrecall.memory.client.MemoryWriter) that the caller
builds and passes in: this module imports nothing that writes a file or a row.
`pgrecall api --read-only` is given none and refuses them with 403.

The routes are in routers (search and documents, health, memories); create_app
assembles them behind the bearer guard, with one set of error handlers.
"""

from __future__ import annotations

import errno
import hmac
import ipaddress
import signal
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal

import psycopg
import structlog
from fastapi import APIRouter, Depends, FastAPI, Header, HTTPException, Query, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse
from pydantic import BaseModel, ConfigDict, Field, create_model
from starlette.exceptions import HTTPException as StarletteHTTPException

from pgrecall import contract
from pgrecall.api import injection_routes, web, web_memories
from pgrecall.api.searcher import Searcher
from pgrecall.api.startup import Lazy
from pgrecall.contract import DEFAULT_K, FILTERS, FUSIONS, HIT_FIELDS, MAX_K, MAX_QUERY_CHARS, MODES
from pgrecall.errors import (
    ConfigurationError,
    DatabaseUnavailable,
    EmbeddingSpaceMismatch,
    InvalidInput,
    PgRecallError,
    first_line,
)
from pgrecall.memory.client import MemoryWriter, NearDuplicate, StaleVersion
from pgrecall.memory.export import export_lines
from pgrecall.memory.notes import MemoryFolderIsALink, MemoryUnreadable, read_memories
from pgrecall.memory.request import remember_request
from pgrecall.memory.version_history import history

log = structlog.get_logger(__name__)
EXPORT_MEDIA_TYPE = "application/x-ndjson"
MAX_IMPORT_BYTES = 64 * 1024 * 1024
SOURCE_HEADER = "X-Pgrecall-Source"  # who wrote a memory; "http" when absent
READ_ONLY_REASON = "this API is read-only (pgrecall api --read-only): memories cannot be written"

# Bounds are documented in the schema but checked by the contract, so that every
# interface refuses the same value with the same message.
_K_SCHEMA = {"minimum": 1, "maximum": MAX_K}
_MODE_SCHEMA = {"enum": list(MODES)}
_FUSION_SCHEMA = {"enum": list(FUSIONS)}
_FUSION_TEXT = "rrf (Reciprocal Rank Fusion) or convex (normalised scores); default: the server's PGRECALL_FUSION"
_PROJECT_TEXT = (
    "the project searched from (its folder, or a name): its documents rank above other projects' at equal "
    "relevance; not a filter (that is filters.project)"
)

Filters = create_model(
    "Filters",
    __config__=ConfigDict(extra="allow", json_schema_extra={"additionalProperties": False}),
    __doc__="Search filters (pgrecall.contract.FILTERS); unknown names are refused.",
    **{
        field.name: (field.type | None, Field(None, description=field.description, examples=[field.example]))
        for field in FILTERS
    },
)


_MERGE_TEXT = (
    "hits of one document within a chunk of each other as one passage, their text joined (chunk_ids); "
    "false: each chunk a hit of its own"
)
_FLOOR_TEXT = (
    "only hits an arm vouches for: a keyword match on a word that is no stop word, or a similarity with the "
    "query of at least PGRECALL_HOOK_MIN_SCORE; false: every hit as ranked"
)


class SearchRequest(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {"query": "why did the nightly export fail", "k": 5},
                {"query": "E-4711", "k": 3, "mode": "keyword", "filters": {"path_prefix": "incidents/"}},
            ]
        },
    )
    query: str = Field(description=f"what to look for, up to {MAX_QUERY_CHARS} characters")
    k: int = Field(DEFAULT_K, description=f"how many hits, 1 to {MAX_K}", json_schema_extra=_K_SCHEMA)
    mode: str = Field("hybrid", description="hybrid, vector or keyword", json_schema_extra=_MODE_SCHEMA)
    filters: Filters | None = None  # type: ignore[valid-type]
    enrich: bool = Field(False, description="also search key-term variants of the query")
    fusion: str | None = Field(None, description=_FUSION_TEXT, json_schema_extra=_FUSION_SCHEMA)
    project: str | None = Field(None, description=_PROJECT_TEXT)
    merge: bool = Field(True, description=_MERGE_TEXT)
    floor: bool = Field(True, description=_FLOOR_TEXT)

    def contract(self) -> contract.SearchRequest:
        filters = self.filters.model_dump(exclude_none=True) if self.filters is not None else None
        return contract.search_request(
            self.query,
            k=self.k,
            mode=self.mode,
            enrich=self.enrich,
            filters=filters,
            fusion=self.fusion,
            project=self.project,
            merge=self.merge,
            floor=self.floor,
        )


SearchQuery = create_model(
    "SearchQuery",
    __config__=ConfigDict(extra="forbid"),
    q=(str, Field(description="the query", examples=["postgres vacuum settings"])),
    k=(int, Field(DEFAULT_K, description=f"how many hits, 1 to {MAX_K}", json_schema_extra=_K_SCHEMA)),
    mode=(str, Field("hybrid", json_schema_extra=_MODE_SCHEMA)),
    enrich=(bool, False),
    fusion=(str | None, Field(None, description=_FUSION_TEXT, json_schema_extra=_FUSION_SCHEMA)),
    # `project` here is the filter, as every filter is a parameter of its own name.
    prefer_project=(str | None, Field(None, description=_PROJECT_TEXT.replace("filters.project", "project"))),
    merge=(bool, Field(True, description=_MERGE_TEXT)),
    floor=(bool, Field(True, description=_FLOOR_TEXT)),
    **{
        field.name: (str | None, Field(None, description=field.description, examples=[field.example]))
        for field in FILTERS
        if field.type is str
    },
)

HitOut = create_model(
    "Hit",
    __doc__="One passage found: the JSON of pgrecall.contract.Hit.to_json(), as the CLI and MCP give it.",
    **{name: (kind, Field(description=HIT_FIELDS[name])) for name, kind in contract.hit_json_types().items()},
)


class SearchResponse(BaseModel):
    query: str
    hits: list[HitOut]  # type: ignore[valid-type]


class ChunkOut(BaseModel):
    ordinal: int
    heading: str
    text: str


class DocumentOut(BaseModel):
    id: int
    source_root: str
    path: str
    kind: str
    title: str | None
    metadata: dict[str, Any]
    mtime: str | None
    indexed_at: str | None
    error: str | None
    project: str | None
    occurred_at: str | None
    chunks: list[ChunkOut]


class RecentOut(BaseModel):
    document_id: int
    source_root: str
    path: str
    kind: str
    title: str | None
    project: str | None = Field(description="the document's project, null for none")
    occurred_at: str = Field(description="its own time (ISO 8601): what the list is ordered by, newest first")
    memory_id: str | None = Field(description="for a memory: its id")


class RecentResponse(BaseModel):
    documents: list[RecentOut]


class HealthOut(BaseModel):
    database: Literal["ok"]
    documents: int
    queue_depth: int
    last_indexed_at: str | None


_METADATA_SCHEMA = {
    "type": "object",
    "additionalProperties": {"type": ["string", "number", "boolean"]},
    "description": "a flat mapping of names to strings, numbers or booleans: front matter of the note",
}


class RememberBody(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "text": "Deploys go out on Tuesdays: Friday deploys broke on-call twice.",
                    "title": "Deploy day",
                    "tags": ["ops"],
                    "metadata": {"project": "apollo"},
                }
            ]
        },
    )
    text: str = Field(
        description=f"one fact or decision, self-contained, with its why; at most {contract.MAX_MEMORY_BYTES} bytes"
    )
    title: str | None = Field(None, description=f"one line, at most {contract.MAX_TITLE_CHARS} characters")
    tags: list[str] = Field(
        default_factory=list, description=f"one line each, at most {contract.MAX_TAG_CHARS} characters"
    )
    metadata: Any = Field(None, json_schema_extra=_METADATA_SCHEMA)
    project: str | None = Field(None, description="the project it belongs to (its folder, or a name)")
    force: bool = Field(
        False, description="save even when a memory says nearly the same (else 409 naming it, nothing saved)"
    )
    allow_secret: bool = Field(False, description="save even a text holding a secret (else 422, nothing saved)")


class UpdateBody(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"examples": [{"text": "Deploys go out on Wednesdays since the March outage."}]},
    )
    text: str | None = Field(None, description="the new text")
    title: str | None = Field(None, description="the new title")
    tags: list[str] | None = Field(None, description="the new tags (they replace the old)")
    expect: str | None = Field(
        None, description="the version you read: 409, and nothing changes, if the memory changed since"
    )
    allow_secret: bool = Field(False, description="save even a text holding a secret (else 422, nothing changes)")


SourceHeader = Annotated[str | None, Header(alias=SOURCE_HEADER, description="who writes the memory (default: http)")]


class MemoryOut(BaseModel):
    id: str = Field(description="12 hexadecimal digits: what PATCH and DELETE take")
    path: str = Field(description="the note's path, relative to the memory folder")
    title: str | None
    text: str
    tags: list[str]
    source: str | None = Field(description=f"who wrote it: the {SOURCE_HEADER} header, else http; mcp clients, cli")
    metadata: dict[str, Any]
    created: str
    updated: str
    version: str = Field(description="what PATCH and DELETE take as expect: changes with every change")
    forgotten: str | None = Field(None, description="in the trash since then (GET /memories?forgotten=true)")


class SimilarOut(BaseModel):
    id: str
    text: str = Field(description="the text its note holds now")
    similarity: float = Field(description="cosine similarity of the two texts' vectors")


class SavedOut(MemoryOut):
    new: bool = Field(description="false: the same text was already remembered, and this is that memory")
    indexed: bool = Field(description="false: the note is written; the index follows once the database answers")
    similar: list[SimilarOut] = Field(
        default_factory=list,
        description="memories alike but stating another fact (a number, code, name or negation differs): "
        "PATCH one of them instead if this text replaces it",
    )


class VersionOut(BaseModel):
    n: int = Field(description="its number: what restore's version takes")
    event: Literal["remember", "update", "forget", "restore", "edit"] = Field(
        description="the change that made it; edit: a change made by hand"
    )
    time: str = Field(description="when it was written (ISO 8601, UTC)")
    version: str = Field(description="the memory's version (as every read returns it) this version left")
    title: str | None
    text: str
    tags: list[str]
    metadata: dict[str, Any]
    updated: str
    recorded: bool = Field(description="false: a hand edit seen, recorded at the memory's next change")


class HistoryOut(BaseModel):
    id: str
    versions: list[VersionOut]


class ImportOut(BaseModel):
    added: list[str] = Field(description="the ids written")
    unchanged: list[str] = Field(description="already there with the same text: nothing happened")
    conflicts: list[str] = Field(description="ids that hold another text here: left alone")
    forgotten: list[str] = Field(description="ids in the trash here: restore them first")
    failed: list[dict[str, str]] = Field(description="lines that could not be imported: where, error")


class MemoriesOut(BaseModel):
    memories: list[MemoryOut]
    unreadable: list[str] = Field(
        default_factory=list, description="notes of the memory folder that cannot be read (not listed)"
    )


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse(status_code=status, content={"error": message})


def _known_fields(request: Request, where: str) -> str:
    if where.startswith("filters"):
        return ", ".join(contract.FILTER_FIELDS)
    route = request.scope.get("route")
    body = getattr(getattr(route, "body_field", None), "field_info", None)
    model = getattr(body, "annotation", None)
    fields = getattr(model, "model_fields", None)
    if fields:
        return ", ".join(fields)
    return ", ".join(SearchQuery.model_fields)


async def _invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
    first = exc.errors()[0] if exc.errors() else {}
    where = ".".join(str(part) for part in first.get("loc", ()) if part not in ("body", "query"))
    message = first.get("msg", "invalid request")
    if first.get("type") == "json_invalid":
        return _error(400, "malformed JSON body")
    if first.get("type") == "extra_forbidden":
        field = str(first.get("loc", ["?"])[-1])
        return _error(422, f"unknown field {field!r}; known: {_known_fields(request, where)}")
    return _error(422, f"{where}: {message}" if where else message)


async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
    response = _error(exc.status_code, str(exc.detail))
    for name, value in (exc.headers or {}).items():
        response.headers[name] = value
    return response


# Each error as a status and a one-line reason; the most specific class registered wins.
_ERRORS: dict[type[Exception], Callable[[Exception], tuple[int, str]]] = {
    InvalidInput: lambda exc: (404 if isinstance(exc, contract.NotFound) else 422, str(exc)),
    psycopg.OperationalError: lambda exc: (503, "database unavailable"),
    DatabaseUnavailable: lambda exc: (503, "database unavailable"),
    EmbeddingSpaceMismatch: lambda exc: (409, str(exc)),  # the index's state conflicts with this server's embedder
    StaleVersion: lambda exc: (409, str(exc)),  # the memory changed since the caller read it
    MemoryUnreadable: lambda exc: (403, str(exc)),  # a note this server may not read (mode 000)
    MemoryFolderIsALink: lambda exc: (409, str(exc)),
    PgRecallError: lambda exc: (503, first_line(exc)),  # e.g. the memory client's start
}


async def _near_duplicate(request: Request, exc: NearDuplicate) -> JSONResponse:
    """409 with the memories that already say it: {"error": one line, "near_duplicates": [{id, text, similarity}]}."""
    return JSONResponse(status_code=409, content=exc.to_json("http"))


def add_error_handlers(app: FastAPI) -> None:
    """Every error a JSON {"error": one line}; nothing reaches a traceback."""
    app.add_exception_handler(RequestValidationError, _invalid_request)  # type: ignore[arg-type]
    app.add_exception_handler(StarletteHTTPException, _http_error)  # type: ignore[arg-type]
    app.add_exception_handler(NearDuplicate, _near_duplicate)  # type: ignore[arg-type]
    for kind, answer in _ERRORS.items():

        async def handler(request: Request, exc: Exception, answer=answer) -> JSONResponse:
            return _error(*answer(exc))

        app.add_exception_handler(kind, handler)


def bearer_guard(token: str | None) -> Callable[[Request], None]:
    """A dependency refusing, with 401, a request without this bearer token; None lets all in."""

    def authorize(request: Request) -> None:
        if token is None:
            return
        header = request.headers.get("authorization", "")
        scheme, _, presented = header.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(presented.strip().encode(), token.encode()):
            raise HTTPException(
                status_code=401, detail="missing or wrong bearer token", headers={"WWW-Authenticate": "Bearer"}
            )

    return authorize


def search_router(searcher: Searcher) -> APIRouter:
    """POST and GET /search, GET /documents/{id}."""
    router = APIRouter()

    def run_search(request: contract.SearchRequest) -> dict[str, Any]:
        hits = searcher.run(request)
        return {"query": request.query, "hits": [hit.to_json() for hit in hits]}

    @router.post("/search", response_model=SearchResponse, summary="Search with a JSON body")
    def search_post(body: SearchRequest) -> dict[str, Any]:
        return run_search(body.contract())

    @router.get("/search", response_model=SearchResponse, summary="Search with query parameters")
    def search_get(params: Annotated[SearchQuery, Query()]) -> dict[str, Any]:  # type: ignore[valid-type]
        values = params.model_dump()
        filters = {field.name: values[field.name] for field in FILTERS if values.get(field.name) is not None}
        request = contract.search_request(
            values["q"],
            k=values["k"],
            mode=values["mode"],
            enrich=values["enrich"],
            filters=filters,
            fusion=values["fusion"],
            project=values["prefer_project"],
            merge=values["merge"],
            floor=values["floor"],
        )
        return run_search(request)

    @router.get("/recent", response_model=RecentResponse, summary="Documents by their own time, newest first")
    def recent(
        project: Annotated[str | None, Query(description="only this project's documents")] = None,
        days: Annotated[int, Query(description="how far back, in days")] = contract.DEFAULT_RECENT_DAYS,
        since: Annotated[str | None, Query(description=f"instead of days: {contract.TIME_FORMS}")] = None,
        kind: Annotated[str | None, Query(description="only documents of this kind")] = None,
        limit: Annotated[int, Query(description=f"at most this many, 1 to {contract.MAX_LIST}")] = 20,
    ) -> dict[str, Any]:
        request = contract.recent_request(project=project, days=days, kind=kind, limit=limit, since=since)
        return {"documents": [document.to_json() for document in searcher.recent(request)]}

    @router.get("/documents/{document_id}", response_model=DocumentOut, summary="A document and its chunks")
    def get_document(document_id: int) -> DocumentOut:
        found = searcher.get_document(document_id)
        if found is None:
            raise HTTPException(status_code=404, detail=f"no document {document_id}")
        data = found.to_dict()
        data["mtime"] = found.mtime.isoformat() if found.mtime else None
        data["indexed_at"] = found.indexed_at.isoformat() if found.indexed_at else None
        data["occurred_at"] = found.occurred_at.isoformat() if found.occurred_at else None
        return DocumentOut(**data)

    return router


def health_router(searcher: Searcher) -> APIRouter:
    """GET /health."""
    router = APIRouter()

    @router.get("/health", response_model=HealthOut, summary="Database reachable, queue depth, freshness")
    def health() -> HealthOut:
        state = searcher.health()
        last = state["last_indexed_at"]
        return HealthOut(
            database="ok",
            documents=state["documents"],
            queue_depth=state["queue_depth"],
            last_indexed_at=last.isoformat() if last else None,
        )

    return router


def memory_router(memories: Lazy[MemoryWriter] | None, read_only: bool, memory_folder: Path | None) -> APIRouter:
    """POST, PATCH, DELETE /memories through the memory client (403 without one, or read-only);
    GET /memories from the folder (no database), else from the client."""
    router = APIRouter()

    def writer() -> MemoryWriter:
        if read_only or memories is None:
            raise HTTPException(status_code=403, detail=READ_ONLY_REASON)
        return memories.get()

    @router.post(
        "/memories",
        response_model=SavedOut,
        status_code=201,
        summary="Remember: write a note of the memory folder and index it",
        responses={
            200: {"description": "the same text was already remembered: that memory", "model": SavedOut},
            409: {"description": "not saved: memories say nearly the same (near_duplicates); force: true saves"},
            422: {"description": "not saved: invalid input, or the text holds a secret (its kind and place)"},
        },
    )
    def remember(body: RememberBody, response: Response, source: SourceHeader = None) -> dict[str, Any]:
        metadata = contract.with_project(body.metadata, body.project)
        saved = writer().remember(
            remember_request(
                body.text,
                title=body.title,
                tags=body.tags,
                metadata=metadata,
                source=source or "http",
                force=body.force,
                allow_secret=body.allow_secret,
            )
        )
        if not saved.created:
            response.status_code = 200
        return saved.to_json()

    @router.patch(
        "/memories/{memory_id}", response_model=SavedOut, summary="Rewrite a memory (text, title, tags) and re-index it"
    )
    def update_memory(memory_id: str, body: UpdateBody) -> dict[str, Any]:
        saved = writer().update(
            memory_id,
            text=body.text,
            title=body.title,
            tags=body.tags,
            expect=body.expect,
            allow_secret=body.allow_secret,
        )
        return saved.to_json()

    @router.delete(
        "/memories/{memory_id}",
        response_model=MemoryOut,
        summary="Forget a memory: its note moves into the trash, out of the index; returns what it held",
    )
    def forget(
        memory_id: str,
        expect: Annotated[str | None, Query(description="the version you read: 409 if it changed since")] = None,
        purge: Annotated[bool, Query(description="delete for good (also a memory in the trash)")] = False,
    ) -> dict[str, Any]:
        return writer().forget(memory_id, expect=expect, purge=purge).to_json()

    @router.post(
        "/memories/{memory_id}/restore",
        response_model=SavedOut,
        summary="Bring a forgotten memory back from the trash, with its id, and index it again",
    )
    def restore(
        memory_id: str,
        version: Annotated[
            int | None, Query(description="bring back what this version of its history held, as a new version")
        ] = None,
    ) -> dict[str, Any]:
        return writer().restore(memory_id, version=version).to_json()

    @router.get(
        "/memories/{memory_id}/history",
        response_model=HistoryOut,
        summary="Every version of a memory, oldest first: what it said before (restore ?version=N brings one back)",
    )
    def memory_history(memory_id: str) -> dict[str, Any]:
        if memory_folder is not None:
            versions = history(memory_folder, memory_id)
        elif memories is not None:
            versions = memories.get().history(memory_id)
        else:
            raise HTTPException(status_code=404, detail="this API serves no memories")
        clean_id = contract.memory_id(memory_id)
        return {"id": clean_id, "versions": [version.to_json(clean_id) for version in versions]}

    @router.get(
        "/memories/export",
        summary="Every memory as JSON Lines (pgrecall memories export), oldest first",
        response_class=PlainTextResponse,
        responses={200: {"content": {EXPORT_MEDIA_TYPE: {}}}},
    )
    def export_memories() -> PlainTextResponse:
        if memory_folder is None:
            raise HTTPException(status_code=404, detail="this API serves no memory folder")
        lines = export_lines(memory_folder)
        return PlainTextResponse("".join(f"{line}\n" for line in lines), media_type=EXPORT_MEDIA_TYPE)

    @router.post(
        "/memories/import",
        response_model=ImportOut,
        summary="Read memories back from an export (JSON Lines in the body), idempotently",
    )
    async def import_memories(request: Request) -> dict[str, Any]:
        body = await request.body()
        if len(body) > MAX_IMPORT_BYTES:
            raise HTTPException(status_code=413, detail=f"an import is at most {MAX_IMPORT_BYTES} bytes")
        try:
            content = body.decode("utf-8")
        except UnicodeDecodeError:
            raise HTTPException(status_code=400, detail="the body is not UTF-8") from None
        target = writer()
        summary = await run_in_threadpool(target.import_lines, content)
        return summary.to_json()

    @router.get("/memories", response_model=MemoriesOut, summary="Memories, newest first")
    def list_memories(
        since: Annotated[str | None, Query(description="updated since this ISO date or time")] = None,
        tag: Annotated[list[str] | None, Query(description="carrying this tag (repeatable: every one)")] = None,
        limit: Annotated[int, Query(description=f"at most this many, 1 to {contract.MAX_LIST}")] = 50,
        forgotten: Annotated[bool, Query(description="the memories in the trash instead")] = False,
    ) -> dict[str, Any]:
        unreadable: list[str] = []
        if memory_folder is not None:
            chosen = read_memories(
                memory_folder, since=since, tags=tag, limit=limit, forgotten=forgotten, unreadable=unreadable
            )
        elif memories is not None:
            chosen = memories.get().list(since=since, tags=tag, limit=limit, forgotten=forgotten)
        else:
            raise HTTPException(status_code=404, detail="this API serves no memories")
        return {"memories": [memory.to_json() for memory in chosen], "unreadable": unreadable}

    return router


def create_app(
    searcher: Searcher,
    token: str | None = None,
    memories: Lazy[MemoryWriter] | None = None,
    read_only: bool = False,
    memory_folder: Path | None = None,
    status: Callable[[], dict[str, Any]] | None = None,
    listen_host: str | None = None,
    editor_command: tuple[str, ...] | None = None,
    injections: Path | None = None,
) -> FastAPI:
    """The app, with the web page (pgrecall.api.web) at /: `status` gives its status page what
    `pgrecall status` reports, `listen_host` joins its Host allow-list. `memories`: the memory client, or a Startup that builds it on the first write (built
    by the caller: this module never imports the write path); None, or `read_only`, refuses writes
    with 403. `memory_folder`: GET /memories reads it (no database); without it, GET asks the client.
    `editor_command`: the document page's "Open in editor" (pgrecall.api.editor.parse_command).
    `injections`: the hooks' records (pgrecall.claude_integration.injection_ledger) that GET /report reads."""
    app = FastAPI(
        title="pgrecall",
        version="1",
        summary="Hybrid search over your notes, and memories for assistants.",
        description="Search a pgrecall index: a vector arm and a BM25 arm, fused by convex combination of "
        "normalised scores (the default) or Reciprocal Rank Fusion. "
        "Memories are Markdown notes of the memory folder, indexed before each write returns.",
    )
    add_error_handlers(app)
    # The pages first: /documents/{id} and /memories answer a browser's navigation with HTML.
    hosts = web.allowed_hosts(listen_host, token)
    memory_pages = web_memories.router(memories, read_only, memory_folder, web.page_context(read_only, memory_folder))
    report_page = injection_routes.page_router(injections, web.page_context(read_only, memory_folder))
    web.mount(
        app, searcher, token, read_only, memory_folder, status, hosts, [memory_pages, report_page], editor_command
    )
    guard = [Depends(bearer_guard(token))]
    app.include_router(search_router(searcher), dependencies=guard)
    app.include_router(health_router(searcher), dependencies=guard)
    app.include_router(memory_router(memories, read_only, memory_folder), dependencies=guard)
    app.include_router(injection_routes.json_router(injections), dependencies=guard)
    return app


def check_binding(host: str, token: str | None, port: int | None = None) -> None:
    """Refuse, before anything starts, a port no socket can bind or an open address without a token."""
    if port is not None and not 1 <= port <= 65535:
        raise ConfigurationError(f"--port must be from 1 to 65535, got {port}")
    if not is_loopback(host) and not token:
        raise ConfigurationError(f"listening on {host} needs PGRECALL_API_TOKEN: every request must then carry it")


def listen(host: str, port: int) -> socket.socket:
    """A socket bound to (host, port), for serve(): bound before the address is offered to anyone,
    so that a port another program holds is one line of error, not a page of that program."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listening = socket.socket(family, socket.SOCK_STREAM)
    listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds its own
    try:
        listening.bind((host, port))
    except OSError as exc:
        listening.close()
        if exc.errno == errno.EADDRINUSE:
            raise ConfigurationError(
                f"port {port} is in use on {host}: another program listens there; choose another with --port"
            ) from exc
        raise ConfigurationError(f"cannot listen on {host} port {port}: {exc.strerror or exc}") from exc
    return listening


def serve(
    searcher: Searcher,
    host: str,
    listening: socket.socket,
    token: str | None,
    memories: Lazy[MemoryWriter] | None = None,
    read_only: bool = False,
    memory_folder: Path | None = None,
    status: Callable[[], dict[str, Any]] | None = None,
    editor_command: tuple[str, ...] | None = None,
    injections: Path | None = None,
) -> None:
    import uvicorn

    check_binding(host, token)
    app = create_app(
        searcher, token if token else None, memories, read_only, memory_folder, status, host, editor_command, injections
    )
    # uvicorn shuts down gracefully on SIGTERM, then raises the signal again
    # under the handler it found; this one turns that into a clean exit 0,
    # which is what a supervisor expects of a requested stop.
    previous = signal.signal(signal.SIGTERM, _exit_cleanly)
    try:
        host, port = listening.getsockname()[:2]
        config = uvicorn.Config(app, host=host, port=port, log_config=None, access_log=False)
        log.info("api_listening", host=host, port=port)  # uvicorn says nothing of sockets it is handed
        uvicorn.Server(config).run(sockets=[listening])
    finally:
        signal.signal(signal.SIGTERM, previous)


def _exit_cleanly(signum, frame) -> None:
    raise SystemExit(0)
