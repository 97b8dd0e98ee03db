"""remember, update, forget: the memory's file changes, then the index follows before the call returns.

So the very next search finds a memory whether or not a service is running;
a running service's watcher then sees an unchanged content hash and does
nothing. The same text remembered twice, by any number of processes at once,
is one memory: an advisory lock keyed by the text's digest serialises the
check and the write. The check reads the folder's notes (the source of truth:
a note written by a process that died before indexing it counts, a hand-edited
note counts by the text it holds now); the index only names a note of this
text that can no longer be read, which is refused rather than written twice.

update and forget hold a lock keyed by the memory's id, across processes, while
they compare the caller's `expect` with the note's version and write: of two
updates made from one version, the second is refused (StaleVersion).

remember's door (pgrecall.worker.memory.door) refuses, saving nothing, a text that holds a
secret (SecretInMemory, before any lock) and, under the text's lock, once the exact-text check
found nothing, a text nearly the same as a memory of the folder (NearDuplicate): `force` and
`allow_secret` let them through.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import psycopg
import structlog

from pgrecall import contract
from pgrecall.errors import InvalidInput, PgRecallError, first_line
from pgrecall.memory import notes as memory_notes
from pgrecall.memory import version_history as memory_history
from pgrecall.memory.client import MemoryNotFound, Saved, StaleVersion
from pgrecall.memory.notes import Memory, MemoryUnreadable
from pgrecall.memory.request import RememberRequest
from pgrecall.postgres import database, queries
from pgrecall.roots import MEMORY_ROOT
from pgrecall.settings import Settings
from pgrecall.worker import store
from pgrecall.worker.adapters.markdown import heading_path
from pgrecall.worker.document import embedding_text
from pgrecall.worker.memory import door as memory_door
from pgrecall.worker.memory import files as memories
from pgrecall.worker.memory import history_writer as memory_history_writer
from pgrecall.worker.memory.files import MemoryFolder
from pgrecall.worker.pipeline import Indexer
from pgrecall.worker.redaction import redact

Q = queries.load("memories.sql")
DOOR = queries.load("door.sql")
log = structlog.get_logger("pgrecall.memories")

__all__ = ["MemoryClient", "MemoryNotFound", "MemoryService", "Saved"]  # the last two: pgrecall.memory.client's


class MemoryService:
    def __init__(self, settings: Settings, url: str, folder: Path):
        self.settings = settings
        self.url = url
        self.files = MemoryFolder(folder)
        self.root = str(self.files.ensure())
        self._serial = asyncio.Lock()  # one write at a time per process; the advisory lock does the rest
        self._pool = None
        self._indexer: Indexer | None = None
        self._lock_connection: psycopg.AsyncConnection | None = None

    async def open(self) -> MemoryService:
        try:
            self._pool = await database.open_async_pool(self.url)
            self._indexer = Indexer.for_settings(self._pool, self.settings)
            self._lock_connection = await psycopg.AsyncConnection.connect(self.url, autocommit=True)
            async with self._pool.connection() as conn:
                await store.upsert_root(conn, MEMORY_ROOT, self.root)
        except BaseException:
            await self.close()  # nothing opened so far is left behind
            raise
        return self

    async def close(self) -> None:
        indexer, lock_connection, pool = self._indexer, self._lock_connection, self._pool
        self._indexer = self._lock_connection = self._pool = None
        try:
            if indexer is not None:
                await indexer.close()
        finally:
            try:
                if lock_connection is not None:
                    await lock_connection.close()
            finally:
                if pool is not None:
                    await pool.close()

    async def __aenter__(self) -> MemoryService:
        return await self.open()

    async def __aexit__(self, *exc_info) -> None:
        await self.close()

    @contextlib.asynccontextmanager
    async def _locked(self, key: str) -> AsyncIterator[None]:
        async with self._serial:
            assert self._lock_connection is not None
            await self._lock_connection.execute(Q["lock"], {"key": key})
            try:
                yield
            finally:
                await self._lock_connection.execute(Q["unlock"], {"key": key})

    def locked_memory(self, memory_id: str) -> contextlib.AbstractAsyncContextManager[None]:
        """The lock of one memory's changes (and of its history), across processes."""
        return self._locked(memory_history_writer.lock_key(self.root, memory_id))

    async def index_memory(self, memory: Memory) -> bool:
        return await self._index(memory)

    async def _index(self, memory: Memory, vectors: dict[str, Any] | None = None) -> bool:
        assert self._indexer is not None
        try:
            outcome = await self._indexer.index_file(self.root, memory.path, vectors)
        except (psycopg.OperationalError, PgRecallError) as exc:
            log.warning("memory_not_indexed", id=memory.id, error=first_line(exc))
            return False
        return outcome.status in ("indexed", "unchanged")

    async def remember(self, request: RememberRequest) -> Saved:
        """`request.force`: save even a near-duplicate (the exact same text still returns its memory);
        `request.allow_secret`: save even a text holding a secret."""
        _refuse_secrets(request.text, request.title, request.allow_secret)
        digest = memory_notes.content_digest(request.text)
        async with self._locked(f"pgrecall.memory.text:{self.root}:{digest}"):
            existing = await self._find_same_text(request.text, digest)
            if existing is not None:
                # A note its writer did not live to index is indexed now; an indexed one is unchanged.
                return Saved(existing, created=False, indexed=await self._index(existing))
            # The check's vector is the note's: indexing it embeds nothing again.
            vectors, similar = (
                ({}, []) if request.force else await self._refuse_near_duplicates(request.text, request.title)
            )
            now = memories.now_utc()
            memory_id = memories.new_id()
            memory = Memory(
                id=memory_id,
                # With allow_secret, the secret is kept in the note but not in its name (logs and listings show it).
                path=memories.relative_path(memory_id, now, *_without_secrets(request.title, request.text)),
                title=request.title,
                text=request.text,
                tags=request.tags,
                source=request.source,
                metadata=request.metadata,
                created=now,
                updated=now,
            )
            await asyncio.to_thread(self.files.write, memory, "remember")
            indexed = await self._index(memory, vectors)
        log.info("memory_remembered", id=memory.id, path=memory.path, indexed=indexed, similar=[m.id for m in similar])
        return Saved(memory, created=True, indexed=indexed, similar=tuple(similar))

    async def _refuse_near_duplicates(
        self, text: str, title: str | None
    ) -> tuple[dict[str, Any], list[memory_door.Candidate]]:
        """NearDuplicate when memories of the folder say nearly the same as `text`; else the text's
        vector, by its embedding text, and the memories alike but stating another fact (a detail
        differs: memory_door.new_details). When the model or the database cannot answer, the memory
        is saved unchecked (as it is written unindexed)."""
        assert self._indexer is not None and self._pool is not None
        threshold = self.settings.memory_duplicate_similarity
        try:
            # What the pipeline embeds for this note: its title is its chunk's heading ("# Title").
            embedded = embedding_text(heading_path([(1, title)]) if title else "", text)
            vector = (await self._indexer.batcher.embed_at_once([embedded]))[0]
            async with self._pool.connection() as conn:
                cursor = await conn.execute(
                    DOOR["nearest_memories"],
                    {
                        "embedding": vector,
                        "root": self.root,
                        "space": self._indexer.embedding_space,
                        "limit": memory_door.MAX_CANDIDATES,
                    },
                )
                rows = await cursor.fetchall()
        except (psycopg.OperationalError, PgRecallError) as exc:
            log.warning("memory_not_checked", error=first_line(exc))
            return {}, []
        candidates = []
        for memory_id, similarity in rows:
            if similarity < threshold:
                break
            if not contract.MEMORY_ID.fullmatch(memory_id):  # a hand-edited front matter's id: no path
                continue
            try:
                # The text the note holds now (a hand edit included), not the index's copy.
                memory = await asyncio.to_thread(self.files.read, memory_id)
            except MemoryUnreadable:
                continue
            if memory is not None:
                candidates.append(memory_door.Candidate(memory.id, memory.text, similarity))
        found = memory_door.near_duplicates(text, candidates, threshold)
        if found:
            log.info(
                "memory_refused", reason="near_duplicate", ids=[c.id for c in found], similarity=found[0].similarity
            )
            raise memory_door.near_duplicate(found)
        return {embedded: vector}, memory_door.similar_facts(text, candidates, threshold)

    async def _unindex(self, path: str) -> None:
        """The index forgets a note's old path; if the database cannot answer, the reconciliation will."""
        assert self._indexer is not None
        try:
            await self._indexer.remove_path(self.root, path)
        except (psycopg.OperationalError, PgRecallError) as exc:
            log.warning("memory_not_unindexed", path=path, error=first_line(exc))

    async def _find_same_text(self, text: str, digest: str) -> Memory | None:
        """The memory of the folder holding exactly this text; MemoryUnreadable when the index
        says an unreadable note holds it."""
        found, unreadable = await asyncio.to_thread(self.files.same_text, text)
        if found is not None or not unreadable:
            return found
        assert self._pool is not None
        async with self._pool.connection() as conn:
            cursor = await conn.execute(Q["memory_by_digest"], {"root": self.root, "digest": digest})
            rows = await cursor.fetchall()
        for (memory_id,) in rows:
            if memory_id in unreadable:
                raise MemoryUnreadable(
                    f"memory {memory_id} holds this text but its note {unreadable[memory_id]} cannot be read: "
                    "give it back its permissions (chmod 600) rather than remember it twice"
                )
        return None

    async def update(
        self,
        memory_id: Any,
        text: Any = None,
        title: Any = None,
        tags: Any = None,
        expect: Any = None,
        allow_secret: Any = False,
    ) -> Saved:
        clean_id = contract.memory_id(memory_id)
        clean_expect = contract.memory_version(expect)
        changes: dict[str, Any] = {}
        if text is not None:
            changes["text"] = contract.memory_text(text)
        if title is not None:
            changes["title"] = contract.memory_title(title)
        if tags is not None:
            changes["tags"] = contract.memory_tags(tags)
        if not changes:
            raise InvalidInput("nothing to update: give text, title or tags")
        _refuse_secrets(changes.get("text"), changes.get("title"), allow_secret)
        async with self.locked_memory(clean_id):
            current = await asyncio.to_thread(self.files.read, clean_id)
            if current is None:
                raise MemoryNotFound(f"no memory {clean_id}")
            _check_version(current, clean_expect)
            await asyncio.to_thread(self.files.settle, clean_id)
            memory = dataclasses.replace(current, **changes, updated=memories.now_utc())
            if "text" in changes or "title" in changes:  # the file name follows them (redacted, as remember's)
                path = memory_notes.renamed_path(
                    current.path, memory.id, memory.created, *_without_secrets(memory.title, memory.text)
                )
                memory = dataclasses.replace(memory, path=path)
            await asyncio.to_thread(self.files.write, memory, "update", current.path)
            if memory.path != current.path:
                await self._unindex(current.path)
            indexed = await self._index(memory)
        log.info(
            "memory_updated",
            id=memory.id,
            path=memory.path,
            renamed_from=current.path if memory.path != current.path else None,
            indexed=indexed,
        )
        return Saved(memory, created=False, indexed=indexed)

    async def forget(self, memory_id: Any, expect: Any = None, purge: Any = False) -> Memory:
        """Move the memory into the trash (`purge`: delete it, also from the trash) and out of the index."""
        clean_id = contract.memory_id(memory_id)
        clean_expect = contract.memory_version(expect)
        if not isinstance(purge, bool):
            raise InvalidInput("purge must be true or false")
        async with self.locked_memory(clean_id):
            current = await asyncio.to_thread(self.files.read, clean_id)
            if current is None:
                if purge:
                    forgotten = await asyncio.to_thread(self.files.purge_forgotten, clean_id)
                    if forgotten is not None:
                        log.info("memory_purged", id=forgotten.id, path=forgotten.path)
                        return forgotten
                raise MemoryNotFound(f"no memory {clean_id}")
            _check_version(current, clean_expect)
            if not purge:
                await asyncio.to_thread(self.files.settle, clean_id)
            memory = await asyncio.to_thread(self.files.delete, clean_id, purge)
            if memory is None:
                raise MemoryNotFound(f"no memory {clean_id}")
            assert self._indexer is not None
            await self._indexer.remove_path(self.root, memory.path)
        log.info("memory_purged" if purge else "memory_forgotten", id=memory.id, path=memory.path)
        return memory

    async def restore(self, memory_id: Any, version: Any = None) -> Saved:
        """Bring a forgotten memory back from the trash, with its id and path, and index it again;
        `version` (n of its history): bring back what that version held, as a new version."""
        clean_id = contract.memory_id(memory_id)
        number = memory_history.version_number(version)
        async with self.locked_memory(clean_id):
            await asyncio.to_thread(self.files.settle, clean_id)
            if number is not None:
                memory = await asyncio.to_thread(self.files.restore_version, clean_id, number, memories.now_utc())
                if memory is None:
                    raise MemoryNotFound(
                        f"memory {clean_id} has no version {number} (pgrecall memories history lists them)"
                    )
            elif await asyncio.to_thread(self.files.locate, clean_id) is not None:
                raise InvalidInput(f"memory {clean_id} is not forgotten: it is in the memory folder")
            else:
                memory = await asyncio.to_thread(self.files.restore, clean_id)
                if memory is None:
                    raise MemoryNotFound(f"no forgotten memory {clean_id} (pgrecall memories --forgotten lists them)")
            indexed = await self._index(memory)
        log.info("memory_restored", id=memory.id, path=memory.path, version=number, indexed=indexed)
        return Saved(memory, created=False, indexed=indexed)

    def list(self, since: Any = None, tags: Any = None, limit: int = 50, forgotten: Any = False) -> list[Memory]:
        return memory_notes.read_memories(self.files.folder, since=since, tags=tags, limit=limit, forgotten=forgotten)

    def history(self, memory_id: Any) -> list[memory_history.Version]:
        return memory_history.history(self.files.folder, memory_id)


def _refuse_secrets(text: str | None, title: str | None, allow_secret: Any) -> None:
    """SecretInMemory when the text or title holds a secret, unless `allow_secret`."""
    if not isinstance(allow_secret, bool):
        raise InvalidInput("allow_secret must be true or false")
    if allow_secret:
        return
    secret = memory_door.find_secret({"text": text, "title": title})
    if secret is not None:
        log.warning("memory_refused", reason="secret", kind=secret.kind, field=secret.field, line=secret.line)
        raise secret.refusal()


def _without_secrets(title: str | None, text: str) -> tuple[str | None, str]:
    return (redact(title)[0] if title else title), redact(text)[0]


def _check_version(current: Memory, expect: str | None) -> None:
    if expect is not None and current.version != expect:
        raise StaleVersion(
            f"memory {current.id} changed since it was read (version {expect}, now {current.version}, "
            f"updated {current.updated}): read it again and retry; nothing was changed"
        )


class MemoryClient:
    """The memory service for synchronous callers (HTTP handlers, MCP tools, the Python API):
    the service runs on an event loop of its own, in one thread. A pgrecall.memory.client.MemoryWriter."""

    def __init__(self, settings: Settings, url: str, folder: Path):
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="pgrecall-memories", daemon=True)
        self._thread.start()
        self._service = MemoryService(settings, url, folder)
        try:
            self._call(self._service.open())
        except BaseException:
            self._stop_loop()
            raise

    @property
    def root(self) -> str:
        return self._service.root

    def _call(self, coroutine):
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()

    def remember(self, request: RememberRequest) -> Saved:
        return self._call(self._service.remember(request))

    def update(
        self,
        memory_id: Any,
        text: Any = None,
        title: Any = None,
        tags: Any = None,
        expect: Any = None,
        allow_secret: Any = False,
    ) -> Saved:
        return self._call(
            self._service.update(memory_id, text=text, title=title, tags=tags, expect=expect, allow_secret=allow_secret)
        )

    def forget(self, memory_id: Any, expect: Any = None, purge: Any = False) -> Memory:
        return self._call(self._service.forget(memory_id, expect=expect, purge=purge))

    def restore(self, memory_id: Any, version: Any = None) -> Saved:
        return self._call(self._service.restore(memory_id, version=version))

    def history(self, memory_id: Any) -> list[memory_history.Version]:
        return self._service.history(memory_id)

    def import_path(self, path: Path):
        from pgrecall.worker.memory.importer import import_path

        return self._call(import_path(self._service, Path(path)))

    def import_lines(self, content: str):
        from pgrecall.worker.memory.importer import import_records, json_line_records

        return self._call(import_records(self._service, json_line_records(content, "body")))

    def list(self, since: Any = None, tags: Any = None, limit: Any = 50, forgotten: Any = False) -> list[Memory]:
        return self._service.list(since=since, tags=tags, limit=limit, forgotten=forgotten)

    def close(self) -> None:
        try:
            self._call(self._service.close())
        finally:
            self._stop_loop()

    def _stop_loop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    def __enter__(self) -> MemoryClient:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()
