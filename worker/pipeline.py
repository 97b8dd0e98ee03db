"""One file through the pipeline: detect, read, parse, chunk, embed, store.

Whatever goes wrong with one file (it cannot be read, parsed, chunked,
embedded or stored) is recorded on that file's document row with the stage,
and the job ends normally: one bad file never costs another. Only errors of
the database connection itself (OperationalError and its kin: a lost
connection, a serialization failure, a deadlock) propagate, so that the queue
retries the job.

What is decided before reading: a path whose link leads out of the root is
skipped (and anything indexed for it removed); an unsupported type and a file
over PGRECALL_MAX_FILE_BYTES are recorded as skipped without being read. A .zip
export is read from its open file instead, bounded by PGRECALL_MAX_EXPORT_BYTES.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import os
import stat as stat_module
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import BinaryIO

import numpy as np
import psycopg
import structlog
from psycopg_pool import AsyncConnectionPool

from pgrecall import kinds
from pgrecall import languages as language_names
from pgrecall.embedders.embedding import Embedder, embedder_for
from pgrecall.errors import UnsupportedFile
from pgrecall.settings import DEFAULT_MAX_FILE_BYTES, Settings, default
from pgrecall.worker import adapters, archive, language, scan, store
from pgrecall.worker.adapters import ParseError
from pgrecall.worker.batcher import EmbeddingBatcher
from pgrecall.worker.chunk import chunk_sections, chunking_signature, token_budget
from pgrecall.worker.document import Chunk, ParsedDocument
from pgrecall.worker.redaction import redact_document
from pgrecall.worker.scan import iter_files, mtime_of

log = structlog.get_logger("pgrecall.worker")
DEFAULT_MAX_EXPORT_BYTES: int = default("max_export_bytes")


# The database is away or the transaction lost a race: the job is retried.
TRANSIENT_ERRORS = (psycopg.OperationalError, psycopg.InterfaceError)
# OperationalErrors that one file causes every time (a value past a btree's row
# size, a tsvector too long): recorded on the file like any other failure.
PERMANENT_DATABASE_ERRORS = (psycopg.errors.ProgramLimitExceeded,)
# Stages whose failure says nothing final about the content: the file's hash is
# not recorded, so the next `pgrecall index` tries it again.
_RETRIED_STAGES = {"embed", "store"}
MAX_ERROR_CHARS = 300


@dataclasses.dataclass(frozen=True)
class Outcome:
    root: str
    path: str
    status: str  # indexed, unchanged, skipped, failed, removed, moved
    chunks: int = 0
    documents: int = 0
    error: str | None = None
    chunks_embedded: int = 0  # of `chunks`, those the model embedded
    chunks_reused: int = 0  # and those that kept the vector of the same text indexed before


@dataclasses.dataclass(frozen=True)
class _Written:
    chunks: int = 0
    embedded: int = 0
    reused: int = 0


@dataclasses.dataclass
class _Attempt:
    """One job's file and where the job is, for the failure record if something raises."""

    root: str
    path: str
    kind: str  # the file's kind by its suffix, recorded with a failure before it is parsed
    started: float  # time.perf_counter() when the job began
    stage: str = "read"
    info: store.FileInfo | None = None
    # Vectors the caller already has, by embedding text: used for a chunk of exactly that text.
    vectors: Mapping[str, np.ndarray] = dataclasses.field(default_factory=dict)


def _indexed(root: str, path: str, written: _Written, *, documents: int) -> Outcome:
    return Outcome(
        root,
        path,
        "indexed",
        chunks=written.chunks,
        documents=documents,
        chunks_embedded=written.embedded,
        chunks_reused=written.reused,
    )


def _as_recorded(root: str, path: str, state: store.DocumentState) -> Outcome:
    """A file whose content is as last seen: unchanged, or skipped or failed again for the reason
    recorded then (the content is not parsed again), as `pgrecall status` counts it."""
    if state.error is None:
        return Outcome(root, path, "unchanged")
    return Outcome(root, path, kinds.recorded_status(state.error_stage), error=state.error)


def describe(exc: BaseException) -> str:
    """One line about an exception, fit for the error column."""
    if isinstance(exc, RecursionError):
        text = "nested too deeply"
    elif isinstance(exc, MemoryError):
        text = "out of memory"
    elif isinstance(exc, (ParseError, UnsupportedFile)):
        text = str(exc)
    elif isinstance(exc, psycopg.Error) and exc.diag.message_primary:
        text = f"{type(exc).__name__}: {exc.diag.message_primary}"
    else:
        text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    line = adapters.clean_text(text.strip().splitlines()[0] if text.strip() else type(exc).__name__)
    return line if len(line) <= MAX_ERROR_CHARS else line[: MAX_ERROR_CHARS - 1] + "…"


def _open_regular(path: str) -> tuple[os.stat_result, BinaryIO]:
    """A regular file, opened without following a link and without blocking (a FIFO swapped in)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    file = open(os.open(path, flags), "rb", closefd=True)  # noqa: SIM115  (the caller closes it)
    status = os.fstat(file.fileno())
    if not stat_module.S_ISREG(status.st_mode):
        file.close()
        raise FileNotFoundError(path)
    return status, file


def _read_regular(path: str, limit: int) -> tuple[os.stat_result, bytes | None]:
    """(stat, content) of a regular file; content None when it is larger than `limit`."""
    status, file = _open_regular(path)
    with file:
        if status.st_size > limit:
            return status, None
        data = file.read(limit + 1)
    return status, data if len(data) <= limit else None


def _stream_digest(file: BinaryIO) -> str:
    """The sha256 of an open file read as a stream, rewound after."""
    digest = hashlib.file_digest(file, "sha256").hexdigest()
    file.seek(0)
    return digest


def _too_large(size: int, limit: int) -> str:
    return f"file too large: {size} bytes, over PGRECALL_MAX_FILE_BYTES ({limit})"


def _redact(root: str, documents: list[ParsedDocument]) -> list[ParsedDocument]:
    """Secrets out before anything is chunked; the log names the kinds and counts, never a secret."""
    redacted = [redact_document(document) for document in documents]
    for document in redacted:
        if document.redactions:
            count = sum(document.redactions.values())
            log.info("secrets_redacted", root=root, path=document.path, count=count, kinds=document.redactions)
    return redacted


class Indexer:
    @classmethod
    def for_settings(
        cls, pool: AsyncConnectionPool, settings: Settings, on_outcome: Callable[[Outcome], None] | None = None
    ) -> Indexer:
        """The model (loaded on first use) behind one batcher shared by every job of this process."""
        embedder = embedder_for(settings)
        batcher = EmbeddingBatcher(
            embedder.embed_batch,
            max_texts=max(settings.embed_batch_size * 4, 64),
            model_batch_size=settings.embed_batch_size,  # each call in batches of similar length
        )
        return cls(
            pool,
            embedder,
            batcher,
            on_outcome=on_outcome,
            chunk_tokens=settings.chunk_tokens,
            max_file_bytes=settings.max_file_bytes,
            max_export_bytes=settings.max_export_bytes,
            include_tool_results=settings.session_tool_results == "on",
            redact_secrets=settings.redact_secrets,
            languages=language_names.parse_languages(settings.languages),
        )

    async def close(self) -> None:
        await self.batcher.close()

    def __init__(
        self,
        pool: AsyncConnectionPool,
        embedder: Embedder,
        batcher: EmbeddingBatcher,
        *,
        chunk_tokens: int,
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
        max_export_bytes: int = DEFAULT_MAX_EXPORT_BYTES,
        on_outcome: Callable[[Outcome], None] | None = None,
        include_tool_results: bool = False,
        redact_secrets: bool = True,
        languages: tuple[str, ...] = language_names.DEFAULT_LANGUAGES,
    ):
        self.pool = pool
        self.languages = languages  # PGRECALL_LANGUAGES, as ISO codes
        self.chunk_tokens = chunk_tokens
        self.redact_secrets = redact_secrets
        self.chunking = chunking_signature(chunk_tokens, redact_secrets)
        self.max_file_bytes = max_file_bytes
        self.max_export_bytes = max_export_bytes
        self.embedder = embedder
        self.embedding_space = embedder.space
        self._space_added = False  # ensure_embedding_space done on this pool's database
        self.batcher = batcher
        self.on_outcome = on_outcome
        self.include_tool_results = include_tool_results  # PGRECALL_SESSION_TOOL_RESULTS

    def _report(self, outcome: Outcome, started: float) -> Outcome:
        fields = {
            "root": outcome.root,
            "path": outcome.path,
            "chunks": outcome.chunks,
            "chunks_embedded": outcome.chunks_embedded,
            "chunks_reused": outcome.chunks_reused,
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
            folder = await store.archive_folder(conn, root)
            if folder is not None:
                return self._report(await self._archive(conn, Path(folder), root, path), started)
            removed = await store.remove(conn, root=root, path=path)
        return self._report(Outcome(root, path, "removed", documents=removed), started)

    async def _archive(self, conn, folder: Path, root: str, path: str) -> Outcome:
        """Gone from an archive root: each file at or under `path` with a copy is kept, marked
        archived; one without (its copy deleted, or never indexed) is removed."""
        kept, removed = [], 0
        for file in await store.files_at_or_under(conn, root, path):
            if await asyncio.to_thread(archive.has_copy, folder, file):
                await store.archive_file(conn, root, file, str(archive.copy_path(folder, file)))
                kept.append(file)
            else:
                removed += await store.remove(conn, root=root, path=file, exact=True)
        status = "archived" if kept and not removed else "removed"
        return Outcome(root, path, status, documents=len(kept) + removed)

    async def _keep(self, folder: Path, attempt: _Attempt, data: bytes) -> None:
        """A file of an archive root, there at its source: its copy is current, it is not archived."""
        attempt.stage = "store"
        await asyncio.to_thread(archive.keep, folder, attempt.path, data)
        async with self.pool.connection() as conn:
            await store.unarchive_file(conn, attempt.root, attempt.path)

    async def move_path(self, root: str, source: str, destination: str) -> Outcome:
        """A renamed file or folder keeps its chunks; the files at the destination are then checked."""
        started = time.perf_counter()
        async with self.pool.connection() as conn:
            moved = await store.rename(conn, root=root, source=source, destination=destination)
        target = Path(root) / destination
        if target.is_dir() and not target.is_symlink():
            for relative in await asyncio.to_thread(lambda: list(iter_files(target))):
                await self.index_file(root, f"{destination}/{relative}")
        else:
            await self.index_file(root, destination)
        return self._report(Outcome(root, f"{source} -> {destination}", "moved", documents=moved), started)

    async def index_file(self, root: str, path: str, vectors: Mapping[str, np.ndarray] | None = None) -> Outcome:
        """Index what is at `path` now; never raises for a problem of the file itself. `vectors`: those
        the caller computed with this indexer's embedder, by embedding text (remember's check has its note's)."""
        attempt = _Attempt(
            root=root, path=path, kind=adapters.kind_of(path), started=time.perf_counter(), vectors=vectors or {}
        )
        try:
            return await self._index_file(attempt)
        except PERMANENT_DATABASE_ERRORS as exc:
            return await self._fail_unexpectedly(attempt, exc)
        except TRANSIENT_ERRORS:
            raise
        except Exception as exc:
            return await self._fail_unexpectedly(attempt, exc)

    async def _fail_unexpectedly(self, attempt: _Attempt, exc: Exception) -> Outcome:
        error = describe(exc)
        log.warning("file_error", root=attempt.root, path=attempt.path, stage=attempt.stage, error=error, exc_info=exc)
        if attempt.info is not None and attempt.stage in _RETRIED_STAGES:
            attempt.info = dataclasses.replace(attempt.info, content_hash=None)
        return await self._fail(attempt, error)

    async def _index_file(self, attempt: _Attempt) -> Outcome:
        root, path = attempt.root, attempt.path
        entry = await asyncio.to_thread(scan.locate, Path(root), path)
        if entry is None:
            return await self.remove_path(root, path)
        size, mtime = entry.size_and_mtime
        attempt.info = store.FileInfo(size, mtime, None) if size is not None else None
        if entry.problem == scan.ROOT_IS_A_LINK:
            # The refusal is the root's, reported by reconciliation, and the index keeps what it
            # holds for it: a failure recorded for this path would bring back, as a failed
            # document, a file deleted before the root was replaced (a forgotten memory).
            return self._report(Outcome(root, path, "skipped", error=entry.problem), attempt.started)
        if entry.problem == scan.OUTSIDE_ROOT:
            return await self._skip(attempt, entry.problem, forget_indexed=True)
        if entry.problem is not None:  # a name that is not UTF-8, a link loop, no permission
            return await self._fail(attempt, entry.problem)

        # Decided before reading: the type and the size.
        if attempt.kind == kinds.UNSUPPORTED:
            return await self._skip(attempt, adapters.unsupported_reason(path))
        if adapters.is_archive(path):  # bounded by what it unpacks to, not by its size
            assert entry.real_path is not None
            return await self._index_archive(attempt, entry.real_path)
        if size is not None and size > self.max_file_bytes:
            return await self._skip(attempt, _too_large(size, self.max_file_bytes))

        attempt.stage = "read"
        assert entry.real_path is not None
        try:
            status, data = await asyncio.to_thread(_read_regular, entry.real_path, self.max_file_bytes)
        except FileNotFoundError:
            return await self.remove_path(root, path)
        except OSError as exc:
            return await self._fail(attempt, f"cannot read: {exc.strerror or exc}")
        attempt.info = store.FileInfo(status.st_size, mtime_of(status), None)
        if data is None:  # it grew past the limit since it was looked at
            return await self._skip(attempt, _too_large(status.st_size, self.max_file_bytes))

        info = attempt.info = dataclasses.replace(attempt.info, content_hash=adapters.content_hash(data))
        async with self.pool.connection() as conn:
            state = await store.document_state(conn, root, path, self.embedding_space)
            folder = await store.archive_folder(conn, root)
            unchanged = state is not None and state.is_current(info.content_hash, self.chunking)
            if unchanged:
                await store.touch(conn, state.id, info)
        if unchanged:
            if folder is not None:  # after the touch is committed: _keep updates the same row
                await self._keep(Path(folder), attempt, data)
            return self._report(_as_recorded(root, path, state), attempt.started)

        attempt.stage = "parse"
        try:
            parsed = await asyncio.to_thread(adapters.parse, path, data, include_tool_results=self.include_tool_results)
        except UnsupportedFile as exc:
            return await self._skip(attempt, str(exc))
        except ParseError as exc:
            return await self._fail(attempt, str(exc))
        if folder is not None:  # copied before it is indexed: the copy exists once the index has it
            await self._keep(Path(folder), attempt, data)
        del data

        if parsed.container:
            return await self._index_container(attempt, parsed, info)
        documents = await self._redacted(attempt, parsed.documents)
        written = await self._write(attempt, documents, parent_id=None)
        outcome = _indexed(root, path, written, documents=len(parsed.documents))
        return self._report(outcome, attempt.started)

    async def _index_archive(self, attempt: _Attempt, real_path: str) -> Outcome:
        """A zip export, read in place: hashed as a stream, its entries parsed out of the open file."""
        root, path = attempt.root, attempt.path
        attempt.stage = "read"
        try:
            status, file = await asyncio.to_thread(_open_regular, real_path)
        except FileNotFoundError:
            return await self.remove_path(root, path)
        except OSError as exc:
            return await self._fail(attempt, f"cannot read: {exc.strerror or exc}")
        with file:
            attempt.info = store.FileInfo(status.st_size, mtime_of(status), None)
            attempt.stage = "parse"
            try:  # a foreign or hostile zip is told by its directory, before gigabytes are hashed
                await asyncio.to_thread(adapters.check_archive, file, max_bytes=self.max_export_bytes)
            except UnsupportedFile as exc:
                return await self._skip(attempt, str(exc))
            except ParseError as exc:
                return await self._fail(attempt, str(exc))
            attempt.stage = "read"
            digest = await asyncio.to_thread(_stream_digest, file)
            info = attempt.info = dataclasses.replace(attempt.info, content_hash=digest)
            async with self.pool.connection() as conn:
                state = await store.document_state(conn, root, path, self.embedding_space)
                if state is not None and state.is_current(digest, self.chunking):
                    await store.touch(conn, state.id, info)
                    return self._report(_as_recorded(root, path, state), attempt.started)
            attempt.stage = "parse"
            try:
                parsed = await asyncio.to_thread(adapters.parse_archive, path, file, max_bytes=self.max_export_bytes)
            except UnsupportedFile as exc:
                return await self._skip(attempt, str(exc))
            except ParseError as exc:
                return await self._fail(attempt, str(exc))
        return await self._index_container(attempt, parsed, info)

    async def _index_container(self, attempt: _Attempt, parsed: adapters.Parsed, info: store.FileInfo) -> Outcome:
        """A file of several documents (an export's conversations): a row for the file,
        one child row per document; only the children whose content changed are embedded again."""
        root, path = attempt.root, attempt.path
        children = parsed.documents
        attempt.stage = "store"
        async with self.pool.connection() as conn:
            # Without its hash first: a crash before the conversations are in
            # must not make the next run believe the export is indexed.
            unhashed = dataclasses.replace(info, content_hash=None)
            parent_id = await store.record_container(
                conn, root=root, path=path, kind=parsed.kind, info=unhashed, chunking=self.chunking
            )
            existing = await store.child_states(conn, parent_id, self.embedding_space)
        changed = [
            child
            for child in children
            if (state := existing.get(child.path)) is None or not state.is_current(child.content_hash, self.chunking)
        ]
        changed = await self._redacted(attempt, changed)
        written = await self._write(attempt, changed, parent_id=parent_id)
        vanished = sorted(set(existing) - {c.path for c in children})
        attempt.stage = "store"
        async with self.pool.connection() as conn:
            await store.remove_children(conn, parent_id, vanished)
            await store.record_container(
                conn, root=root, path=path, kind=parsed.kind, info=info, chunking=self.chunking
            )
        outcome = _indexed(root, path, written, documents=len(changed))
        return self._report(outcome, attempt.started)

    async def _redacted(self, attempt: _Attempt, documents: list[ParsedDocument]) -> list[ParsedDocument]:
        """The documents as they are to be stored: without their secrets, unless redaction is off.
        Part of making documents of the file: a failure here is the parse stage's."""
        if not self.redact_secrets or not documents:
            return documents
        attempt.stage = "parse"
        return await asyncio.to_thread(_redact, attempt.root, documents)

    async def _write(self, attempt: _Attempt, documents: list[ParsedDocument], *, parent_id: int | None) -> _Written:
        """Chunk, embed and store `documents` of the attempt's file (the info it holds now).
        A chunk whose embedding text the document already has in this space keeps its vector."""
        if not documents:
            return _Written()
        for document in documents:
            for warning in document.warnings:
                log.warning("file_warning", root=attempt.root, path=document.path, warning=warning)
        attempt.stage = "chunk"
        async with self.pool.connection() as conn:
            known = await store.stored_chunks(
                conn,
                root=attempt.root,
                paths=[d.path for d in documents],
                parent_id=parent_id,
                space=self.embedding_space,
                chunking=self.chunking,
            )
        chunked, languages = await asyncio.to_thread(self._chunk_all, documents, known.sections)
        attempt.stage = "embed"
        reused = [
            known.vectors.get(document.path, {}).get(chunk.embedding_text, attempt.vectors.get(chunk.embedding_text))
            for document, chunks in zip(documents, chunked, strict=True)
            for chunk in chunks
        ]
        every = [chunk for chunks in chunked for chunk in chunks]
        missing = [i for i, vector in enumerate(reused) if vector is None]
        fresh = await self.batcher.embed(  # in slices: other jobs' notes go between them
            [every[i].embedding_text for i in missing], [every[i].token_count for i in missing]
        )
        vectors = np.zeros((len(every), self.embedder.dimensions), dtype=np.float32)
        for i, vector in enumerate(reused):
            if vector is not None:
                vectors[i] = vector
        if missing:
            vectors[missing] = fresh
        attempt.stage = "store"
        offset = 0
        async with self.pool.connection() as conn:
            if every and not self._space_added:  # once per process, before any write of the space
                await store.ensure_embedding_space(conn, self.embedding_space, self.embedder.dimensions)
                self._space_added = True
            for document, chunks in zip(documents, chunked, strict=True):
                await store.write_document(
                    conn,
                    root=attempt.root,
                    document=document,
                    chunks=chunks,
                    vectors=vectors[offset : offset + len(chunks)],
                    info=attempt.info,
                    chunking=self.chunking,
                    embedding_space=self.embedding_space,
                    parent_id=parent_id,
                    language=languages[document.path],
                )
                offset += len(chunks)
        return _Written(chunks=len(every), embedded=len(missing), reused=len(every) - len(missing))

    def _chunk_all(
        self, documents: list[ParsedDocument], known: dict[str, dict[str, list[Chunk]]]
    ) -> tuple[list[list[Chunk]], dict[str, str]]:
        """Each document's chunks, and its language (pgrecall.worker.language), off the event loop."""
        max_tokens = token_budget(self.chunk_tokens, self.embedder.max_tokens)
        count = self.embedder.count_tokens
        chunked = [chunk_sections(d.sections, count, max_tokens=max_tokens, known=known.get(d.path)) for d in documents]
        languages = {
            d.path: language.document_language(d.metadata, (s.text for s in d.sections), self.languages)
            for d in documents
        }
        return chunked, languages

    async def _skip(self, attempt: _Attempt, reason: str, *, forget_indexed: bool = False) -> Outcome:
        """Recorded as skipped, not failed: a file that is not for the index (`status` counts these apart)."""
        failure = store.Failure(
            root=attempt.root,
            path=attempt.path,
            kind=kinds.UNSUPPORTED,
            stage=kinds.SKIPPED_STAGE,
            error=reason,
            info=attempt.info,
            forget_indexed=forget_indexed,
        )
        return await self._record(failure, attempt.started, status="skipped")

    async def _fail(self, attempt: _Attempt, error: str) -> Outcome:
        """Recorded as failed at the attempt's stage."""
        failure = store.Failure(
            root=attempt.root,
            path=attempt.path,
            kind=attempt.kind,
            stage=attempt.stage,
            error=error,
            info=attempt.info,
        )
        return await self._record(failure, attempt.started, status="failed")

    async def _record(self, failure: store.Failure, started: float, *, status: str) -> Outcome:
        async with self.pool.connection() as conn:
            await store.record_failure(conn, failure, chunking=self.chunking)
        return self._report(Outcome(failure.root, failure.path, status, error=failure.error), started)
