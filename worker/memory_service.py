"""remember, update, forget: the memory's file changes, then the index follows before the call returns.

So the very next search finds a memory whether or not a service is running;
a running service's watcher then sees an unchanged content hash and does
nothing. The same text remembered twice, by any number of processes at once,
is one memory: an advisory lock keyed by the text's digest serialises the
check (in the index) and the write.
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

from pgrecall import contract, database, memory_notes, queries
from pgrecall.errors import InvalidInput, PgRecallError, first_line
from pgrecall.memory_client import MemoryNotFound, Saved
from pgrecall.memory_notes import Memory
from pgrecall.roots import MEMORY_ROOT
from pgrecall.settings import Settings
from pgrecall.worker import memories, store
from pgrecall.worker.memories import MemoryFolder
from pgrecall.worker.pipeline import Indexer

Q = queries.load("memories.sql")
log = structlog.get_logger("pgrecall.memories")

__all__ = ["MemoryClient", "MemoryNotFound", "MemoryService", "Saved"]  # the last two: pgrecall.memory_client's


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

    async def _index(self, memory: Memory) -> bool:
        assert self._indexer is not None
        try:
            outcome = await self._indexer.index_file(self.root, memory.path)
        except (psycopg.OperationalError, PgRecallError) as exc:
            log.warning("memory_not_indexed", id=memory.id, error=first_line(exc))
            return False
        return outcome.status in ("indexed", "unchanged")

    async def remember(
        self,
        text: Any,
        title: Any = None,
        tags: Any = (),
        metadata: Any = None,
        source: Any = None,
    ) -> Saved:
        clean_text = contract.memory_text(text)
        clean_title = contract.memory_title(title)
        clean_tags = contract.memory_tags(tags)
        clean_metadata = contract.memory_metadata(metadata)
        clean_source = contract.memory_source(source)
        digest = memory_notes.content_digest(clean_text)
        async with self._locked(f"pgrecall.memory.text:{self.root}:{digest}"):
            existing = await self._find_by_digest(digest)
            if existing is not None:
                return Saved(existing, created=False, indexed=True)
            now = memories.now_utc()
            memory_id = memories.new_id()
            memory = Memory(
                id=memory_id,
                path=memories.relative_path(memory_id, now, clean_title, clean_text),
                title=clean_title,
                text=clean_text,
                tags=clean_tags,
                source=clean_source,
                metadata=clean_metadata,
                created=now,
                updated=now,
            )
            await asyncio.to_thread(self.files.write, memory)
            indexed = await self._index(memory)
        log.info("memory_remembered", id=memory.id, path=memory.path, indexed=indexed)
        return Saved(memory, created=True, indexed=indexed)

    async def _find_by_digest(self, digest: str) -> Memory | None:
        assert self._pool is not None
        async with self._pool.connection() as conn:
            cursor = await conn.execute(Q["memory_by_digest"], {"root": self.root, "digest": digest})
            row = await cursor.fetchone()
        if row is None or row[0] is None:
            return None
        return await asyncio.to_thread(self.files.read, row[0])

    async def update(self, memory_id: Any, text: Any = None, title: Any = None, tags: Any = None) -> Saved:
        clean_id = contract.memory_id(memory_id)
        changes: dict[str, Any] = {}
        if text is not None:
            changes["text"] = contract.memory_text(text)
        if title is not None:
            changes["title"] = contract.memory_title(title)
        if tags is not None:
            changes["tags"] = contract.memory_tags(tags)
        if not changes:
            raise InvalidInput("nothing to update: give text, title or tags")
        async with self._locked(f"pgrecall.memory.id:{self.root}:{clean_id}"):
            current = await asyncio.to_thread(self.files.read, clean_id)
            if current is None:
                raise MemoryNotFound(f"no memory {clean_id}")
            memory = dataclasses.replace(current, **changes, updated=memories.now_utc())
            await asyncio.to_thread(self.files.write, memory)
            indexed = await self._index(memory)
        log.info("memory_updated", id=memory.id, path=memory.path, indexed=indexed)
        return Saved(memory, created=False, indexed=indexed)

    async def forget(self, memory_id: Any) -> Memory:
        clean_id = contract.memory_id(memory_id)
        async with self._locked(f"pgrecall.memory.id:{self.root}:{clean_id}"):
            memory = await asyncio.to_thread(self.files.delete, clean_id)
            if memory is None:
                raise MemoryNotFound(f"no memory {clean_id}")
            assert self._indexer is not None
            await self._indexer.remove_path(self.root, memory.path)
        log.info("memory_forgotten", id=memory.id, path=memory.path)
        return memory

    def list(self, since: Any = None, tags: Any = None, limit: int = 50) -> list[Memory]:
        return memory_notes.select(
            self.files.memories(),
            since=contract.memory_since(since),
            tags=contract.memory_tags(tags),
            limit=contract.list_limit(limit),
        )


class MemoryClient:
    """The memory service for synchronous callers (HTTP handlers, MCP tools, the Python API):
    the service runs on an event loop of its own, in one thread. A pgrecall.memory_client.MemoryWriter."""

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

    def remember(self, text: Any, title: Any = None, tags: Any = (), metadata: Any = None, source: Any = None) -> Saved:
        return self._call(self._service.remember(text, title=title, tags=tags, metadata=metadata, source=source))

    def update(self, memory_id: Any, text: Any = None, title: Any = None, tags: Any = None) -> Saved:
        return self._call(self._service.update(memory_id, text=text, title=title, tags=tags))

    def forget(self, memory_id: Any) -> Memory:
        return self._call(self._service.forget(memory_id))

    def list(self, since: Any = None, tags: Any = None, limit: Any = 50) -> list[Memory]:
        return self._service.list(since=since, tags=tags, limit=limit)

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
