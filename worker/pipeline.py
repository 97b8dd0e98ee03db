"""One file through the pipeline: read, parse, chunk, embed, store.

Permanent problems (an unsupported or broken file) are recorded on the
document and end the job normally; database and other transient errors
propagate so that the queue retries the job.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable
from pathlib import Path

import structlog
from psycopg_pool import AsyncConnectionPool

from pgrecall.embedding import Embedder, get_embedder
from pgrecall.errors import UnsupportedFile
from pgrecall.settings import Settings
from pgrecall.worker import adapters, store
from pgrecall.worker.adapters import ParseError
from pgrecall.worker.batcher import EmbeddingBatcher
from pgrecall.worker.chunk import chunk_sections, chunking_signature
from pgrecall.worker.document import Chunk, ParsedDocument
from pgrecall.worker.scan import iter_files, mtime_of

log = structlog.get_logger("pgrecall.worker")

CLAUDE_EXPORT_KIND = "claude_export"


@dataclasses.dataclass(frozen=True)
class Outcome:
    root: str
    path: str
    status: str  # indexed, unchanged, skipped, failed, removed
    chunks: int = 0
    documents: int = 0
    error: str | None = None


def _kind_for(path: str) -> str:
    suffix = Path(path).suffix.lower()
    if suffix in adapters.MARKDOWN_SUFFIXES:
        return "markdown"
    if suffix in adapters.TEXT_SUFFIXES:
        return "text"
    if suffix in adapters.JSON_SUFFIXES:
        return CLAUDE_EXPORT_KIND
    return "unsupported"


class Indexer:
    @classmethod
    def for_settings(
        cls, pool: AsyncConnectionPool, settings: Settings, on_outcome: Callable[[Outcome], None] | None = None
    ) -> Indexer:
        """The model (loaded on first use) behind one batcher shared by every job of this process."""
        embedder = get_embedder(settings.model, settings.embed_batch_size)
        batcher = EmbeddingBatcher(embedder.embed_batch, max_texts=max(settings.embed_batch_size * 4, 64))
        return cls(pool, embedder, batcher, on_outcome=on_outcome, chunk_tokens=settings.chunk_tokens)

    async def close(self) -> None:
        await self.batcher.close()

    def __init__(
        self,
        pool: AsyncConnectionPool,
        embedder: Embedder,
        batcher: EmbeddingBatcher,
        *,
        chunk_tokens: int,
        on_outcome: Callable[[Outcome], None] | None = None,
    ):
        self.pool = pool
        self.chunk_tokens = chunk_tokens
        self.chunking = chunking_signature(chunk_tokens)
        self.embedder = embedder
        self.batcher = batcher
        self.on_outcome = on_outcome

    def _report(self, outcome: Outcome, started: float) -> Outcome:
        fields = {
            "root": outcome.root,
            "path": outcome.path,
            "chunks": outcome.chunks,
            "ms": round((time.perf_counter() - started) * 1000),
        }
        if outcome.error:
            log.warning(f"file_{outcome.status}", error=outcome.error, **fields)
        else:
            log.info(f"file_{outcome.status}", **fields)
        if self.on_outcome:
            self.on_outcome(outcome)
        return outcome

    async def remove_path(self, root: str, path: str) -> Outcome:
        started = time.perf_counter()
        async with self.pool.connection() as conn:
            removed = await store.remove(conn, root=root, path=path)
        return self._report(Outcome(root, path, "removed", documents=removed), started)

    async def move_path(self, root: str, source: str, destination: str) -> Outcome:
        """A renamed file or folder keeps its chunks; the files at the destination are then checked."""
        started = time.perf_counter()
        async with self.pool.connection() as conn:
            moved = await store.rename(conn, root=root, source=source, destination=destination)
        target = Path(root) / destination
        if target.is_dir():
            for relative in await asyncio.to_thread(lambda: list(iter_files(target))):
                await self.index_file(root, f"{destination}/{relative}")
        else:
            await self.index_file(root, destination)
        return self._report(Outcome(root, f"{source} -> {destination}", "moved", documents=moved), started)

    async def index_file(self, root: str, path: str) -> Outcome:
        started = time.perf_counter()
        full_path = Path(root) / path
        try:
            stat = full_path.stat()
            if not full_path.is_file():
                raise FileNotFoundError(path)
            data = await asyncio.to_thread(full_path.read_bytes)
        except FileNotFoundError:
            return await self.remove_path(root, path)
        except OSError as exc:
            return await self._fail(
                root, path, _kind_for(path), "read", f"cannot read: {exc.strerror or exc}", None, started
            )

        info = store.FileInfo(
            size_bytes=stat.st_size,
            mtime=mtime_of(stat),
            content_hash=adapters.content_hash(data),
        )
        async with self.pool.connection() as conn:
            state = await store.document_state(conn, root, path)
            if state is not None and state.content_hash == info.content_hash and state.chunking == self.chunking:
                await store.touch(conn, state.id, info)
                return self._report(Outcome(root, path, "unchanged"), started)

        try:
            documents = await asyncio.to_thread(adapters.parse, path, data)
        except UnsupportedFile as exc:
            return await self._fail(root, path, "unsupported", "detect", str(exc), info, started, status="skipped")
        except ParseError as exc:
            return await self._fail(root, path, _kind_for(path), "parse", str(exc), info, started)

        if (
            any(document.path != path for document in documents)
            or not documents
            and _kind_for(path) == CLAUDE_EXPORT_KIND
        ):
            return await self._index_export(root, path, documents, info, started)
        chunk_count = await self._write(root, documents, info, parent_id=None)
        return self._report(Outcome(root, path, "indexed", chunks=chunk_count, documents=len(documents)), started)

    async def _index_export(
        self, root: str, path: str, conversations: list[ParsedDocument], info: store.FileInfo, started: float
    ) -> Outcome:
        title = Path(path).name
        async with self.pool.connection() as conn:
            # Without its hash first: a crash before the conversations are in
            # must not make the next run believe the export is indexed.
            unhashed = dataclasses.replace(info, content_hash=None)
            parent_id = await store.record_container(
                conn, root=root, path=path, kind=CLAUDE_EXPORT_KIND, title=title, info=unhashed, chunking=self.chunking
            )
            existing = await store.child_hashes(conn, parent_id)
        current = {c.path: (c.content_hash, None, self.chunking) for c in conversations}
        changed = [c for c in conversations if existing.get(c.path) != current[c.path]]
        chunk_count = await self._write(root, changed, info, parent_id=parent_id)
        vanished = sorted(set(existing) - {c.path for c in conversations})
        async with self.pool.connection() as conn:
            await store.remove_documents(conn, root, vanished)
            await store.record_container(
                conn, root=root, path=path, kind=CLAUDE_EXPORT_KIND, title=title, info=info, chunking=self.chunking
            )
        return self._report(Outcome(root, path, "indexed", chunks=chunk_count, documents=len(changed)), started)

    async def _write(
        self, root: str, documents: list[ParsedDocument], info: store.FileInfo | None, parent_id: int | None
    ) -> int:
        if not documents:
            return 0
        chunked = await asyncio.to_thread(self._chunk_all, documents)
        texts = [chunk.embedding_text for chunks in chunked for chunk in chunks]
        vectors = await self.batcher.embed(texts)
        offset = 0
        async with self.pool.connection() as conn:
            for document, chunks in zip(documents, chunked, strict=True):
                await store.write_document(
                    conn,
                    root=root,
                    document=document,
                    chunks=chunks,
                    vectors=vectors[offset : offset + len(chunks)],
                    info=info,
                    chunking=self.chunking,
                    parent_id=parent_id,
                )
                offset += len(chunks)
        return len(texts)

    def _chunk_all(self, documents: list[ParsedDocument]) -> list[list[Chunk]]:
        max_tokens = min(self.chunk_tokens, self.embedder.max_tokens) - 2  # [CLS] and [SEP]
        return [chunk_sections(d.sections, self.embedder.count_tokens, max_tokens=max_tokens) for d in documents]

    async def _fail(
        self,
        root: str,
        path: str,
        kind: str,
        stage: str,
        error: str,
        info: store.FileInfo | None,
        started: float,
        status: str = "failed",
    ) -> Outcome:
        async with self.pool.connection() as conn:
            await store.record_failure(
                conn, root=root, path=path, kind=kind, stage=stage, error=error, info=info, chunking=self.chunking
            )
        return self._report(Outcome(root, path, status, error=error), started)
