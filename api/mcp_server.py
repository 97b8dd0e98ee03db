"""`pgrecall mcp`: the index as Model Context Protocol tools over stdio (the official SDK).

Read-only: the tools search and fetch; nothing an assistant calls can change
the index. Only MCP messages go to stdout; logs go to stderr.

The server answers the handshake at once: the database and the embedding model
start in the background (pgrecall.api.startup), since clients time out servers
that are slow to answer. A tool call made before they are ready waits for them;
one made after a failed start gets the cause as its error, and starts them again.
"""

from __future__ import annotations

from typing import Any

import psycopg
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations

from pgrecall.api.search import Searcher
from pgrecall.api.startup import Startup, reason
from pgrecall.errors import PgRecallError

INSTRUCTIONS = (
    "pgrecall is the user's long-term memory: their notes, documents and past Claude conversations, "
    "indexed for search. Call search_memory before answering questions about the user's projects, "
    "decisions, past discussions or anything they may have written down; then call get_document for "
    "the full text of a promising hit."
)
READ_ONLY = ToolAnnotations(readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False)


def create_server(searcher: Searcher | Startup) -> MCPServer:
    server = MCPServer(name="pgrecall", instructions=INSTRUCTIONS)
    startup = searcher if isinstance(searcher, Startup) else None

    def ready() -> Searcher:
        return startup.get() if startup is not None else searcher

    @server.tool(annotations=READ_ONLY)
    def search_memory(query: str, k: int = 8, filters: dict[str, Any] | None = None) -> dict[str, Any]:
        """Search the user's notes and past conversations (hybrid: meaning and exact words).

        Use natural language ("why did we pick Postgres for the queue") or exact terms
        (error codes like E-4711, file names, identifiers). Returns the best passages,
        best first, each with its document path, heading, text and score.

        Args:
            query: what to look for, in the user's words or as exact terms.
            k: how many passages to return (1-50, default 8).
            filters: optional; any of path_prefix ("projects/"), kind ("markdown", "text",
                "claude_conversation"), root (a watched folder's name), metadata (front matter
                to match, {"status": "draft"}), modified_since (ISO date).
        """
        if not 1 <= k <= 50:
            raise ToolError("k must be from 1 to 50")
        try:
            hits = ready().search(query, k=k, filters=filters)
        except (PgRecallError, psycopg.OperationalError) as exc:  # the assistant gets the reason
            raise ToolError(reason(exc)) from None
        return {
            "hits": [
                {
                    "document_id": hit.document_id,
                    "path": hit.path,
                    "heading": hit.heading,
                    "text": hit.text,
                    "score": round(hit.score, 6),
                    "kind": hit.kind,
                    "title": hit.title,
                }
                for hit in hits
            ]
        }

    @server.tool(annotations=READ_ONLY)
    def get_document(id_or_path: str) -> dict[str, Any]:
        """Fetch one whole document: a note or conversation, with all its text.

        Args:
            id_or_path: a document_id from search_memory, or a path (relative to its
                folder, as search_memory shows it, or absolute).
        """
        try:
            found = ready().get_document(id_or_path)
        except (PgRecallError, psycopg.OperationalError) as exc:
            raise ToolError(reason(exc)) from None
        if found is None:
            raise ToolError(f"no document {id_or_path!r}; use a document_id or path from search_memory")
        return {
            "document_id": found.id,
            "path": found.path,
            "source_root": found.source_root,
            "title": found.title,
            "kind": found.kind,
            "metadata": found.metadata,
            "modified": found.mtime.isoformat() if found.mtime else None,
            "text": "\n\n".join(
                f"{chunk['heading']}\n\n{chunk['text']}" if chunk["heading"] else chunk["text"]
                for chunk in found.chunks
            ),
        }

    return server


def serve_stdio(searcher: Searcher | Startup) -> None:
    """Serve over stdio until the client closes; a Startup is closed with it."""
    try:
        create_server(searcher).run("stdio")
    finally:
        searcher.close()
