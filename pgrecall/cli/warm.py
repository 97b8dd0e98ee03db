"""The warm path, composed: serve's warm search service, and the searcher of `pgrecall mcp` that asks it first.

The service (pgrecall.api.warm_server) gets a Searcher of its own, warmed before
the socket appears, so that a client that finds the socket finds the model loaded.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime
from typing import TYPE_CHECKING, Any

import structlog

from pgrecall import warm_client
from pgrecall.cli.common import searcher
from pgrecall.errors import PgRecallError, reason
from pgrecall.settings import Settings

if TYPE_CHECKING:
    from pgrecall.api.read_queries import Document, RecentDocument
    from pgrecall.api.searcher import Searcher
    from pgrecall.api.startup import Startup
    from pgrecall.contract import Hit, RecentRequest, SearchRequest

POOL_SIZE = 4  # connections, and threads answering at once

log = structlog.get_logger(__name__)


def open_warm_searcher(settings: Settings) -> Searcher:
    from pgrecall.api.startup import warm_searcher

    index = searcher(settings, pool_size=POOL_SIZE)
    try:
        warm_searcher(index)  # the model loaded, a connection open: the first client waits for neither
    except BaseException:
        index.close()
        raise
    return index


async def serve_warm(settings: Settings) -> None:
    """Serve warm searches until cancelled. Never fails serve: a service that cannot start is logged, and
    clients answer in-process."""
    from pgrecall.api.warm_server import WarmServer

    path = warm_client.socket_path(settings)
    if path is None:
        log.info("warm_socket_off")
        return
    opening = asyncio.ensure_future(asyncio.to_thread(open_warm_searcher, settings))
    try:
        index = await asyncio.shield(opening)
    except asyncio.CancelledError:
        with contextlib.suppress(Exception):
            (await opening).close()  # stopped while it was starting: what it opened is closed
        raise
    except Exception as exc:
        log.error("warm_socket_failed", path=str(path), error=reason(exc))
        return
    server = WarmServer(index, path, workers=POOL_SIZE)
    try:
        await server.start()
        await asyncio.Event().wait()  # until cancelled
    except (OSError, PgRecallError) as exc:
        log.error("warm_socket_failed", path=str(path), error=reason(exc))
    finally:
        await server.close()
        await asyncio.to_thread(index.close)


class WarmSearcher:
    """What `pgrecall mcp` reads the index with (an IndexReader, the Lazy of pgrecall.api.mcp_server): each call asks
    serve's warm service, and only when none runs the in-process searcher `local`, started by the first
    call that needs it, so that a session beside a running serve never loads a model."""

    def __init__(self, settings: Settings, local: Startup[Searcher]):
        self.settings = settings
        self.local = local

    def get(self) -> WarmSearcher:
        return self

    def close(self) -> None:
        self.local.close()

    def run(self, request: SearchRequest) -> list[Hit]:
        hits = warm_client.search(request, self.settings)
        return hits if hits is not None else self.local.get().run(request)

    def get_document(self, id_or_path: int | str) -> Document | None:
        found = warm_client.get_document(id_or_path, self.settings)
        if found is None:
            return self.local.get().get_document(id_or_path)
        return document_of(found.document) if found.document is not None else None

    def recent(self, request: RecentRequest) -> list[RecentDocument]:
        found = warm_client.recent(request, self.settings)
        if found is None:
            return self.local.get().recent(request)
        return [recent_document_of(document) for document in found]


def document_of(data: dict[str, Any]) -> Document:
    """A Document rebuilt from its to_dict(), as the warm service sends it."""
    from pgrecall.api.read_queries import Document

    times = {"mtime", "indexed_at", "occurred_at"}
    fields = {f.name: data.get(f.name) for f in dataclasses.fields(Document)}
    for name in times:
        if fields[name]:
            fields[name] = datetime.datetime.fromisoformat(fields[name])
    return Document(**fields)


def recent_document_of(data: dict[str, Any]) -> RecentDocument:
    """A RecentDocument rebuilt from its to_json(), as the warm service sends it."""
    from pgrecall.api.read_queries import RecentDocument

    return RecentDocument(**{**data, "occurred_at": datetime.datetime.fromisoformat(data["occurred_at"])})
