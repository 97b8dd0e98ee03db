"""`pgrecall api`: the search module over HTTP JSON (FastAPI on uvicorn).

Loopback by default. Listening on any other address requires a bearer token
(PGRECALL_API_TOKEN), and then every request must carry it. Bad input gets a
4xx with a one-line reason; nothing reaches a traceback.
"""

from __future__ import annotations

import hmac
import ipaddress
import signal
from typing import Annotated, Any, Literal

import psycopg
from fastapi import Depends, FastAPI, HTTPException, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from pgrecall.api.search import FILTER_FIELDS, MAX_QUERY_CHARS, Searcher
from pgrecall.errors import ConfigurationError, DatabaseUnavailable, InvalidInput

MAX_K = 100


class Filters(BaseModel):
    model_config = ConfigDict(extra="forbid")
    source_root: str | None = None
    root: str | None = Field(None, description="a root's name, as given to serve/watch")
    path_prefix: str | None = Field(None, description="relative to the root, or absolute")
    kind: str | None = Field(None, description="markdown, text or claude_conversation")
    metadata: dict[str, Any] | None = Field(None, description='front matter to match, e.g. {"project": "apollo"}')
    modified_since: str | None = Field(None, description="ISO date or time")


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
    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    k: int = Field(10, ge=1, le=MAX_K)
    mode: Literal["hybrid", "vector", "keyword"] = "hybrid"
    filters: Filters | None = None
    enrich: bool = Field(False, description="also search key-term variants of the query")


class HitOut(BaseModel):
    chunk_id: int
    document_id: int
    path: str
    source_root: str
    heading: str
    text: str
    snippet: str
    score: float
    ranks: dict[str, int | None]
    kind: str
    title: str | None


class SearchResponse(BaseModel):
    query: str
    hits: list[HitOut]


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
    chunks: list[ChunkOut]


class HealthOut(BaseModel):
    database: Literal["ok"]
    documents: int
    queue_depth: int
    last_indexed_at: str | None


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse(status_code=status, content={"error": message})


def create_app(searcher: Searcher, token: str | None = None) -> FastAPI:
    app = FastAPI(
        title="pgrecall",
        version="1",
        summary="Hybrid search over your notes (read-only).",
        description="Search a pgrecall index: a vector arm and a BM25 arm fused with Reciprocal Rank Fusion.",
    )

    def authorize(request: Request) -> None:
        if token is None:
            return
        header = request.headers.get("authorization", "")
        scheme, _, presented = header.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(presented.strip().encode(), token.encode()):
            raise HTTPException(
                status_code=401, detail="missing or wrong bearer token", headers={"WWW-Authenticate": "Bearer"}
            )

    guard = [Depends(authorize)]

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(part) for part in first.get("loc", ()) if part != "body")
        message = first.get("msg", "invalid request")
        if first.get("type") == "json_invalid":
            return _error(400, "malformed JSON body")
        if first.get("type") == "extra_forbidden":
            field = str(first.get("loc", ["?"])[-1])
            known = ", ".join(FILTER_FIELDS) if "filters" in where else "query, k, mode, filters, enrich"
            return _error(422, f"unknown field {field!r}; known: {known}")
        return _error(422, f"{where}: {message}" if where else message)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        response = _error(exc.status_code, str(exc.detail))
        for name, value in (exc.headers or {}).items():
            response.headers[name] = value
        return response

    @app.exception_handler(InvalidInput)
    async def invalid_input(request: Request, exc: InvalidInput) -> JSONResponse:
        return _error(422, str(exc))

    @app.exception_handler(psycopg.OperationalError)
    @app.exception_handler(DatabaseUnavailable)
    async def database_down(request: Request, exc: Exception) -> JSONResponse:
        return _error(503, "database unavailable")

    def run_search(body: SearchRequest) -> SearchResponse:
        filters = body.filters.model_dump(exclude_none=True) if body.filters else None
        hits = searcher.search(body.query, k=body.k, filters=filters, mode=body.mode, enrich_query=body.enrich)
        return SearchResponse(query=body.query, hits=[HitOut(**hit.to_dict()) for hit in hits])

    @app.post("/search", response_model=SearchResponse, dependencies=guard, summary="Search with a JSON body")
    def search_post(body: SearchRequest) -> SearchResponse:
        return run_search(body)

    @app.get("/search", response_model=SearchResponse, dependencies=guard, summary="Search with query parameters")
    def search_get(
        q: Annotated[str, Query(min_length=1, max_length=MAX_QUERY_CHARS, examples=["postgres vacuum settings"])],
        k: Annotated[int, Query(ge=1, le=MAX_K)] = 10,
        mode: Literal["hybrid", "vector", "keyword"] = "hybrid",
        enrich: bool = False,
        path_prefix: str | None = None,
        kind: str | None = None,
        root: str | None = None,
    ) -> SearchResponse:
        filters = Filters(path_prefix=path_prefix, kind=kind, root=root)
        return run_search(SearchRequest(query=q, k=k, mode=mode, enrich=enrich, filters=filters))

    @app.get(
        "/documents/{document_id}", response_model=DocumentOut, dependencies=guard, summary="A document and its chunks"
    )
    def get_document(document_id: int) -> DocumentOut:
        found = searcher.get_document(document_id)
        if found is None:
            raise HTTPException(status_code=404, detail=f"no document {document_id}")
        data = found.to_dict()
        data["mtime"] = found.mtime.isoformat() if found.mtime else None
        data["indexed_at"] = found.indexed_at.isoformat() if found.indexed_at else None
        return DocumentOut(**data)

    @app.get(
        "/health", response_model=HealthOut, dependencies=guard, summary="Database reachable, queue depth, freshness"
    )
    def health() -> HealthOut:
        state = searcher.health()
        last = state["last_indexed_at"]
        return HealthOut(
            database="ok",
            documents=state["documents"],
            queue_depth=state["queue_depth"],
            last_indexed_at=last.isoformat() if last else None,
        )

    return app


def check_binding(host: str, token: str | None, port: int | None = None) -> None:
    """Refuse, before anything starts, a port no socket can bind or an open address without a token."""
    if port is not None and not 1 <= port <= 65535:
        raise ConfigurationError(f"--port must be from 1 to 65535, got {port}")
    if not is_loopback(host) and not token:
        raise ConfigurationError(f"listening on {host} needs PGRECALL_API_TOKEN: every request must then carry it")


def serve(searcher: Searcher, host: str, port: int, token: str | None) -> None:
    import uvicorn

    check_binding(host, token, port)
    app = create_app(searcher, token if token else None)
    # uvicorn shuts down gracefully on SIGTERM, then raises the signal again
    # under the handler it found; this one turns that into a clean exit 0,
    # which is what a supervisor expects of a requested stop.
    previous = signal.signal(signal.SIGTERM, _exit_cleanly)
    try:
        uvicorn.run(app, host=host, port=port, log_config=None, access_log=False)
    finally:
        signal.signal(signal.SIGTERM, previous)


def _exit_cleanly(signum, frame) -> None:
    raise SystemExit(0)
