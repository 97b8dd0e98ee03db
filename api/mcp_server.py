"""`pgrecall mcp`: the index and the memories as Model Context Protocol tools over stdio (the official SDK).

search_memory, get_document and recent_memories read the index (an IndexReader). remember, update_memory and
forget write notes of the memory folder (nothing else: a user's own notes are
never changed), through a memory client the caller passes in (this module never
imports the write path); list_memories reads that folder. Hits and memories are
the JSON of pgrecall.contract, as the CLI and the HTTP API give them. Only
MCP messages go to stdout; logs go to stderr.

The server answers the handshake at once: the database, the embedding model and
the memory client start in the background (pgrecall.api.startup), since clients
time out servers that are slow to answer. A tool call made before they are ready
waits for them; one made after a failed start gets the cause as its error, and
starts them again.
"""

from __future__ import annotations

import codecs
import io
import os
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
import psycopg
import structlog
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp_types import ClientCapabilities, RootsCapability, ToolAnnotations
from pydantic import ValidationError

from pgrecall import contract
from pgrecall.api.searcher import IndexReader
from pgrecall.api.startup import Lazy
from pgrecall.errors import InvalidInput, PgRecallError, reason
from pgrecall.memory.client import MemoryWriter, NearDuplicate, resembles
from pgrecall.memory.notes import read_memories
from pgrecall.memory.request import remember_request
from pgrecall.memory.version_history import history

log = structlog.get_logger(__name__)
ROOTS_TIMEOUT_S = 2.0

INSTRUCTIONS = (
    "pgrecall is the user's long-term memory: their notes, documents and past Claude conversations, "
    "indexed for search, and the memories assistants saved in earlier sessions. Call search_memory before "
    "answering questions about the user's projects, decisions, preferences, past discussions or anything "
    "they may have written down; then call get_document for the full text of a promising hit. "
    "When the user makes a decision, states a preference, or tells you a fact about their projects that "
    "will matter in a later session, save it with remember: one fact or decision per memory, "
    "self-contained, with its why, never secrets. Search first so as not to save a near-duplicate; "
    "correct an outdated memory with update_memory, remove a wrong one with forget."
)
READ_ONLY = ToolAnnotations(readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False)
WRITE = ToolAnnotations(readOnlyHint=False, destructiveHint=False, idempotentHint=True, openWorldHint=False)
REWRITE = ToolAnnotations(readOnlyHint=False, destructiveHint=True, idempotentHint=True, openWorldHint=False)
DEFAULT_SOURCE = "mcp"
T = TypeVar("T")


def client_name(ctx: Context | None) -> str:
    """The MCP client's name from the initialize handshake (clientInfo.name), else "mcp"."""
    try:
        params = ctx.session.client_params  # type: ignore[union-attr]  (the handshake's, or the request envelope's)
        name = params.client_info.name if params is not None else None
    except (AttributeError, LookupError, ValueError):
        name = None
    return name.strip() if isinstance(name, str) and name.strip() else DEFAULT_SOURCE


async def client_project(ctx: Context | None) -> str | None:
    """The project of the MCP client's first root (a file:// folder, normalised as every project is),
    else None: a client without roots support, one that lists none, or one too slow to answer."""
    try:
        session = ctx.session  # type: ignore[union-attr]
        if not session.check_client_capability(ClientCapabilities(roots=RootsCapability())):
            return None
        with warnings.catch_warnings():  # roots are deprecated in the 2026-07-28 protocol, not gone
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            with anyio.fail_after(ROOTS_TIMEOUT_S):
                result = await session.list_roots()
    except (AttributeError, LookupError, ValueError, TimeoutError, MCPError) as exc:
        log.info("mcp_roots_unavailable", error=reason(exc))
        return None
    for root in result.roots:
        try:
            return contract.normal_project(str(root.uri))
        except InvalidInput:
            continue
    return None


INVALID_UTF8 = "pgrecall-invalid-utf8"  # the codec error handler of the stdio reader


def _mark_invalid_utf8(exc: UnicodeError) -> tuple[str, int]:
    """Bytes of stdin that are not UTF-8 become contract.INVALID_UTF8_MARK (a noncharacter), which
    every memory field refuses in one line, rather than U+FFFD stored as if it had been sent."""
    if not isinstance(exc, UnicodeDecodeError):
        raise exc
    return contract.INVALID_UTF8_MARK, exc.end


def _one_line(exc: ValidationError) -> str:
    errors = exc.errors()
    first = errors[0] if errors else {}
    where = ".".join(str(part) for part in first.get("loc", ()))
    message = f"{where}: {first.get('msg', 'invalid argument')}" if where else first.get("msg", "invalid argument")
    return message + (f" (and {len(errors) - 1} more)" if len(errors) > 1 else "")


class PgRecallMCPServer(MCPServer):
    """The SDK's server with pgrecall's two habits: an argument of the wrong type is refused in
    one line ("tags: Input should be a valid list"), not the validator's four lines and URL; and
    stdin is decoded strictly (invalid UTF-8 is refused by the tools, never stored as U+FFFD)."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Context | None = None) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                raise ToolError(_one_line(exc.__cause__)) from exc.__cause__
            raise

    async def run_stdio_async(self) -> None:
        codecs.register_error(INVALID_UTF8, _mark_invalid_utf8)
        wire = io.TextIOWrapper(os.fdopen(os.dup(0), "rb"), encoding="utf-8", errors=INVALID_UTF8)
        async with stdio_server(stdin=anyio.wrap_file(wire)) as (read_stream, write_stream):
            await self._lowlevel_server.run(
                read_stream, write_stream, self._lowlevel_server.create_initialization_options()
            )


def _call(work: Callable[[], T]) -> T:
    try:
        return work()
    except (PgRecallError, psycopg.OperationalError) as exc:  # the assistant gets the reason, in one line
        raise ToolError(reason(exc)) from None


def add_search_memory(server: MCPServer, searcher: Lazy[IndexReader]) -> None:
    @server.tool(annotations=READ_ONLY)
    async def search_memory(
        ctx: Context,
        query: str,
        k: int = 8,
        filters: dict[str, Any] | None = None,
        mode: str = "hybrid",
        fusion: str | None = None,
        project: str | None = None,
        since: str | None = None,
        before: str | None = None,
        merge: bool = True,
        floor: bool = True,
    ) -> dict[str, Any]:
        """Search the user's notes, past conversations and saved memories (hybrid: meaning and exact words).

        Use natural language ("why did we pick Postgres for the queue") or exact terms
        (error codes like E-4711, file names, identifiers). Returns the best passages,
        best first: each with its document path and document_id, heading, text, snippet,
        score, the document's front matter (metadata) and when it was modified.

        Args:
            query: what to look for, in the user's words or as exact terms.
            k: how many passages to return (1-100, default 8).
            filters: optional; any of path_prefix ("projects/"), kind ("markdown", "text",
                "claude_conversation", "claude_code_session", "chatgpt_conversation", "claude_project"), root (a watched folder's name; "memories" for the saved
                memories only), metadata (front matter to match, {"status": "draft"}),
                project (only that project's documents: its folder or name), modified_since (ISO date).
            mode: "hybrid" (default), or "keyword" for exact words only, "vector" for meaning only.
            fusion: how hybrid combines meaning and exact words: "rrf" (by rank) or "convex" (by
                normalised score); leave it out for the server's default.
            project: the project you work in (its folder): its documents rank first at equal
                relevance, others stay found. Default: your client's first root; "" for none.
            since: only documents from then on, by their own time (a memory's creation, a
                conversation's last message): "7d", "24h", "2w", "yesterday", "today", "2026-11-01".
            before: only documents from before then, in the same forms.
            merge: neighbouring passages of one document come as one (default); false: each
                chunk apart (chunk_ids lists a passage's chunks).
            floor: only passages that meaning or a real word of the query vouches for (default);
                false: also those hidden as a weak match of meaning alone or of stop words only.
        """
        if project is None:
            project = await client_project(ctx)
        when = {name: value for name, value in (("since", since), ("before", before)) if value is not None}
        merged = {**(filters or {}), **when} if when else filters
        request = _call(
            lambda: contract.search_request(
                query,
                k=k,
                mode=mode,
                filters=merged,
                fusion=fusion,
                project=project,
                merge=merge,
                floor=floor,
            )
        )
        hits = await anyio.to_thread.run_sync(lambda: _call(lambda: searcher.get().run(request)))
        return {"query": request.query, "hits": [hit.to_json() for hit in hits]}


def add_get_document(server: MCPServer, searcher: Lazy[IndexReader]) -> None:
    @server.tool(annotations=READ_ONLY)
    def get_document(id_or_path: str) -> dict[str, Any]:
        """Fetch one whole document: a note or conversation, with all its text.

        Args:
            id_or_path: a document_id from search_memory, or a path (relative to its
                folder, as search_memory shows it, or absolute).
        """
        found = _call(lambda: searcher.get().get_document(id_or_path))
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
            "project": found.project,
            "occurred_at": found.occurred_at.isoformat() if found.occurred_at else None,
            "text": "\n\n".join(
                f"{chunk['heading']}\n\n{chunk['text']}" if chunk["heading"] else chunk["text"]
                for chunk in found.chunks
            ),
        }


def add_recent_memories(server: MCPServer, searcher: Lazy[IndexReader]) -> None:
    @server.tool(annotations=READ_ONLY)
    def recent_memories(
        project: str | None = None, days: int = contract.DEFAULT_RECENT_DAYS, kind: str | None = None, limit: int = 20
    ) -> dict[str, Any]:
        """What was remembered or discussed lately: memories, notes, sessions and conversations by
        their own time (a memory's creation, a conversation's last message), newest first.

        For "what did we decide last week": then get_document or search_memory for the detail.

        Args:
            project: only this project's documents (its folder or name).
            days: how far back, in days (default 7).
            kind: only documents of this kind ("markdown", "claude_code_session", ...).
            limit: at most this many (1-1000, default 20).
        """
        request = _call(lambda: contract.recent_request(project=project, days=days, kind=kind, limit=limit))
        found = _call(lambda: searcher.get().recent(request))
        return {"documents": [document.to_json() for document in found]}


def add_remember(server: MCPServer, memories: Lazy[MemoryWriter]) -> None:
    @server.tool(annotations=WRITE)
    async def remember(
        ctx: Context,
        text: str,
        title: str | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        project: str | None = None,
        force: bool = False,
        allow_secret: bool = False,
    ) -> dict[str, Any]:
        """Save a memory for later sessions: a Markdown note in the user's memory folder, searchable at once.

        Remember when the user makes a decision, states a preference, or tells you a fact
        about their projects, people or setup that will matter in a later session. A good
        memory is one fact or decision, self-contained (it makes sense without this
        conversation: name the project, the thing, the date if it matters) and says why,
        e.g. "Apollo deploys go out on Tuesdays: Friday deploys broke on-call twice in March."
        Never store secrets (passwords, tokens, keys). Call search_memory first: if a memory
        already says this, update_memory it instead of saving a near-duplicate. The same
        text saved twice returns the existing memory (new: false). A text nearly the same as
        existing memories is not saved: the result says so (saved: false) and lists them
        (near_duplicates: id, text, similarity); update_memory one of them, or call remember
        again with force=true if it is truly a different fact. A text that brings its own number,
        code, name or negation is another fact and is saved; when memories resemble it, the result
        names them (similar, and a message): update_memory one of them instead if the new text
        replaces it. A text holding a secret is refused.

        Args:
            text: the memory itself, at most 64 KiB.
            title: optional one-line title.
            tags: optional short tags ("ops", "apollo"), one line each, at most 64 characters.
            metadata: optional flat mapping of names to strings, numbers or booleans
                ({"status": "draft"}), stored as front matter and usable as a search filter.
            project: the project it belongs to (its folder); default: your client's first root.
                "" for none: a memory about the user that holds in every project.
            force: save even when memories say nearly the same (after you checked they differ).
            allow_secret: save even a text holding a secret; only when the user asks for it.

        Returns the memory: id (for update_memory and forget), path, text, tags, created, ...,
        similar (memories it resembles; often empty).
        """
        source = client_name(ctx)
        if project is None:
            project = await client_project(ctx)
        with_project = _call(lambda: contract.with_project(metadata, project))

        def save() -> dict[str, Any]:
            try:
                saved = memories.get().remember(
                    remember_request(
                        text,
                        title=title,
                        tags=tags,
                        metadata=with_project,
                        source=source,
                        force=force,
                        allow_secret=allow_secret,
                    )
                )
            except NearDuplicate as exc:  # an answer to act on, not a failure
                near = [memory.to_json() for memory in exc.similar]
                return {"saved": False, "message": exc.describe(exc.similar, "mcp"), "near_duplicates": near}
            if saved.similar:
                return {"saved": True, "message": resembles(saved.similar, "mcp"), **saved.to_json()}
            return {"saved": True, **saved.to_json()}

        return await anyio.to_thread.run_sync(lambda: _call(save))


def add_update_memory(server: MCPServer, memories: Lazy[MemoryWriter]) -> None:
    @server.tool(annotations=REWRITE)
    def update_memory(
        id: str,
        text: str | None = None,
        title: str | None = None,
        tags: list[str] | None = None,
        expect: str | None = None,
        allow_secret: bool = False,
    ) -> dict[str, Any]:
        """Correct a memory saved earlier: replace its text, title or tags (only what you give changes).

        Use it when a remembered fact or decision has changed, rather than saving a second,
        contradicting memory. Only memories can be updated, never the user's own notes:
        the id comes from remember or list_memories (12 hexadecimal digits).

        Args:
            id: the memory's id.
            text: the new text (self-contained, with its why).
            title: the new title.
            tags: the new tags; they replace the old ones.
            expect: the memory's version as you read it (every memory carries its "version"): if the
                memory changed since, the call fails and nothing changes: read it again, then retry.
                Leave it out to overwrite whatever it holds.
            allow_secret: save even a text holding a secret; only when the user asks for it.
        """
        return _call(
            lambda: memories.get().update(
                id, text=text, title=title, tags=tags, expect=expect, allow_secret=allow_secret
            )
        ).to_json()


def add_forget(server: MCPServer, memories: Lazy[MemoryWriter]) -> None:
    @server.tool(annotations=REWRITE)
    def forget(id: str, expect: str | None = None, purge: bool = False) -> dict[str, Any]:
        """Forget a memory: its note moves into the trash and out of the search (restore_memory brings
        it back; the trash is emptied after some days). For a memory that is wrong, or that the user
        asks you to forget. Only memories can be forgotten, never the user's own notes: the id comes
        from remember or list_memories (12 hexadecimal digits). Returns what the memory held, with
        forgotten: when it was forgotten (restore_memory(id) undoes it unless purged).

        Args:
            id: the memory's id.
            expect: the version you read; if the memory changed since, nothing is forgotten.
            purge: delete it for good at once, with no way back; only when the user asks for that.
        """
        return _call(lambda: memories.get().forget(id, expect=expect, purge=purge)).to_json()


def add_restore_memory(server: MCPServer, memories: Lazy[MemoryWriter]) -> None:
    @server.tool(annotations=WRITE)
    def restore_memory(id: str, version: int | None = None) -> dict[str, Any]:
        """Bring back a memory forgotten by mistake: it returns from the trash with its id, searchable
        again. list_memories with forgotten=true lists what the trash holds. With a version (from
        memory_history), bring back what the memory said then, forgotten or not, as a new version.

        Args:
            id: the forgotten memory's id.
            version: the number of one of its versions (memory_history lists them).
        """
        return _call(lambda: memories.get().restore(id, version=version)).to_json()


def add_memory_history(server: MCPServer, memories: Lazy[MemoryWriter], memory_folder: Path | None) -> None:
    @server.tool(annotations=READ_ONLY)
    def memory_history(id: str) -> dict[str, Any]:
        """What a memory said before: every version, oldest first (remember, update, forget, restore,
        edit: changed by hand). restore_memory with a version brings one back.

        Args:
            id: the memory's id (also a forgotten one).
        """
        if memory_folder is not None:
            versions = _call(lambda: history(memory_folder, id))
        else:
            versions = _call(lambda: memories.get().history(id))
        clean_id = id.strip().lower()
        return {"id": clean_id, "versions": [version.to_json(clean_id) for version in versions]}


def add_list_memories(server: MCPServer, memories: Lazy[MemoryWriter], memory_folder: Path | None) -> None:
    @server.tool(annotations=READ_ONLY)
    def list_memories(
        since: str | None = None, tags: list[str] | None = None, limit: int = 50, forgotten: bool = False
    ) -> dict[str, Any]:
        """List the saved memories, newest first (by last update), with their ids.

        To find memories by meaning, use search_memory (filters: {"root": "memories"}) instead.

        Args:
            since: only memories updated since this ISO date or time ("2026-03-01").
            tags: only memories carrying every one of these tags.
            limit: at most this many (1-1000, default 50).
            forgotten: list the forgotten memories (in the trash) instead, for restore_memory.
        """
        unreadable: list[str] = []
        if memory_folder is not None:
            chosen = _call(
                lambda: read_memories(
                    memory_folder, since=since, tags=tags, limit=limit, forgotten=forgotten, unreadable=unreadable
                )
            )
        else:
            chosen = _call(lambda: memories.get().list(since=since, tags=tags, limit=limit, forgotten=forgotten))
        answer: dict[str, Any] = {"memories": [memory.to_json() for memory in chosen]}
        if unreadable:
            answer["unreadable"] = unreadable
        return answer


def create_server(
    searcher: Lazy[IndexReader], memories: Lazy[MemoryWriter] | None = None, memory_folder: Path | None = None
) -> MCPServer:
    """`searcher` and `memories` are built by the caller (a Startup of each, or Ready): this module
    never imports the write path. `memories` None serves no memory tools. `memory_folder`:
    list_memories reads it (else asks the client)."""
    server = PgRecallMCPServer(name="pgrecall", instructions=INSTRUCTIONS)
    add_search_memory(server, searcher)
    add_get_document(server, searcher)
    add_recent_memories(server, searcher)
    if memories is not None:
        add_remember(server, memories)
        add_update_memory(server, memories)
        add_forget(server, memories)
        add_restore_memory(server, memories)
        add_memory_history(server, memories, memory_folder)
        add_list_memories(server, memories, memory_folder)
    return server


def serve_stdio(
    searcher: Lazy[IndexReader], memories: Lazy[MemoryWriter] | None = None, memory_folder: Path | None = None
) -> None:
    """Serve over stdio until the client closes; the Startups (or what was passed) are closed with it."""
    try:
        create_server(searcher, memories, memory_folder).run("stdio")
    finally:
        try:
            searcher.close()
        finally:
            if memories is not None:
                memories.close()
