"""Documents in the index, for the write path: their states as last indexed and the writes that change them.

Rows leave this module as frozen dataclasses built by column name, each
SELECT naming exactly its record's fields (tests/test_rows.py). A document is
replaced in one transaction: its old chunks (and their postings) out, the new
ones in through binary COPY, the BM25 statistics moved by the difference, the
document row updated. A crash anywhere rolls all of it back.
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np
import psycopg
from pgvector import Vector
from psycopg.rows import class_row, scalar_row
from psycopg.types.json import Jsonb

from pgrecall import bm25, kinds
from pgrecall.postgres import locks, queries
from pgrecall.projects import project_of
from pgrecall.terms import identifier_terms
from pgrecall.worker import statistics
from pgrecall.worker.document import Chunk, ParsedDocument, embedding_text
from pgrecall.worker.language import document_language

Q = queries.load("index.sql")


@dataclasses.dataclass(frozen=True)
class FileInfo:
    size_bytes: int
    mtime: datetime.datetime
    content_hash: str | None


@dataclasses.dataclass(frozen=True)
class DocumentState:
    """A root's file as last indexed (query document_state)."""

    id: int
    kind: str
    content_hash: str | None
    size_bytes: int | None
    mtime: datetime.datetime | None
    error: str | None
    error_stage: str | None
    chunking: str | None
    other_space: bool  # it (or a conversation of an export) has vectors of another embedding space

    def is_current(self, content_hash: str | None, chunking: str) -> bool:
        """Indexed from this content, chunked by `chunking`, with vectors of the asked space only:
        nothing to do. A failure recorded for this content counts as current too (not retried)."""
        return self.content_hash == content_hash and self.chunking == chunking and not self.other_space


@dataclasses.dataclass(frozen=True)
class ChildState:
    """A conversation of an export as last indexed (query child_documents)."""

    path: str
    content_hash: str | None
    error: str | None
    chunking: str | None
    other_space: bool  # it has vectors of another embedding space than the asked one

    def is_current(self, content_hash: str | None, chunking: str) -> bool:
        """Indexed without error from this content, chunked by `chunking`, in the asked space."""
        return (
            self.content_hash == content_hash
            and self.error is None
            and self.chunking == chunking
            and not self.other_space
        )


@dataclasses.dataclass(frozen=True)
class FileState:
    """A root's file as last indexed, by what the reconciliation compares (query file_states)."""

    path: str
    size_bytes: int | None
    mtime: datetime.datetime | None
    content_hash: str | None
    chunking: str | None
    other_space: bool  # it (or a conversation of an export) has vectors of another embedding space
    failed: bool = False  # recorded as failed or skipped, with its reason

    def is_current(self, size_bytes: int | None, mtime: datetime.datetime | None, chunking: str) -> bool:
        """Of this size and modification time, chunked by `chunking`, in the asked space: no job needed."""
        return (
            self.size_bytes == size_bytes and self.mtime == mtime and self.chunking == chunking and not self.other_space
        )


async def document_state(conn: psycopg.AsyncConnection, root: str, path: str, space: str) -> DocumentState | None:
    async with conn.cursor(row_factory=class_row(DocumentState)) as cursor:
        await cursor.execute(Q["document_state"], {"root": root, "path": path, "space": space})
        return await cursor.fetchone()


async def child_states(conn: psycopg.AsyncConnection, parent_id: int, space: str) -> dict[str, ChildState]:
    """path -> state of an export's conversations; other_space against `space`."""
    async with conn.cursor(row_factory=class_row(ChildState)) as cursor:
        await cursor.execute(Q["child_documents"], {"parent_id": parent_id, "space": space})
        return {state.path: state for state in await cursor.fetchall()}


async def touch(conn: psycopg.AsyncConnection, document_id: int, info: FileInfo) -> None:
    await conn.execute(Q["touch_document"], {"id": document_id, "size_bytes": info.size_bytes, "mtime": info.mtime})


@dataclasses.dataclass(frozen=True)
class StoredChunk:
    """A chunk as indexed, with its vector and the section it was cut from (query stored_chunks)."""

    path: str
    ordinal: int
    heading: str
    text: str
    token_count: int
    embedding: Vector
    section_key: str | None  # None: cut with other settings, or written before 0021
    fresh_from: int | None


@dataclasses.dataclass(frozen=True)
class Known:
    """What is indexed now for some documents: vectors by embedding text, chunks by section."""

    vectors: dict[str, dict[str, np.ndarray]]  # path -> embedding text -> vector
    sections: dict[str, dict[str, list[Chunk]]]  # path -> section key -> its chunks, in order


async def stored_chunks(
    conn: psycopg.AsyncConnection,
    *,
    root: str,
    paths: Sequence[str],
    parent_id: int | None,
    space: str,
    chunking: str,
) -> Known:
    """What is indexed now for these documents in `space`. A vector depends on its text and
    space alone, and a section's chunks on its text and `chunking`, so one read before a
    concurrent rewrite is still right for what it is kept for."""
    known = Known({}, {})
    params = {"root": root, "paths": list(paths), "parent_id": parent_id, "space": space, "chunking": chunking}
    async with conn.cursor(binary=True, row_factory=class_row(StoredChunk)) as cursor:
        await cursor.execute(Q["stored_chunks"], params)
        async for row in cursor:
            vector = row.embedding.to_numpy()
            known.vectors.setdefault(row.path, {})[embedding_text(row.heading, row.text)] = vector
            if row.section_key is not None and row.fresh_from is not None:
                chunk = Chunk(row.ordinal, row.heading, row.text, row.token_count, row.fresh_from, row.section_key)
                known.sections.setdefault(row.path, {}).setdefault(row.section_key, []).append(chunk)
    return known


@dataclasses.dataclass(frozen=True)
class Statistics:
    """What some documents contribute to BM25's statistics, per language (0024)."""

    terms: dict[tuple[str, str], tuple[int, int]]  # (language, term) -> (chunks, documents) containing it
    # language -> (chunks, lexemes, documents with at least one chunk)
    totals: dict[str, tuple[int, int, int]] = dataclasses.field(default_factory=dict)


NO_STATISTICS = Statistics({})


async def _statistics_of(conn: psycopg.AsyncConnection, document_ids: list[int]) -> Statistics:
    async with conn.pipeline():  # both in one round trip
        term_rows = await conn.execute(Q["term_counts"], {"document_ids": document_ids})
        total_rows = await conn.execute(Q["chunk_totals"], {"document_ids": document_ids})
    terms = {(language, term): (chunks, documents) for language, term, chunks, documents in await term_rows.fetchall()}
    totals = {language: tuple(counts) for language, *counts in await total_rows.fetchall()}
    return Statistics(terms, totals)


async def _move_statistics(conn: psycopg.AsyncConnection, before: Statistics, after: Statistics) -> bool:
    """Record the difference as delta rows (pgrecall.worker.statistics folds them); True if any."""
    deltas = {}
    for key in before.terms.keys() | after.terms.keys():
        old_chunks, old_documents = before.terms.get(key, (0, 0))
        new_chunks, new_documents = after.terms.get(key, (0, 0))
        if (old_chunks, old_documents) != (new_chunks, new_documents):
            deltas[key] = (new_chunks - old_chunks, new_documents - old_documents)
    changed = sorted(deltas)
    if changed:
        params = {
            "languages": [language for language, _ in changed],
            "terms": [term for _, term in changed],
            "deltas": [deltas[key][0] for key in changed],
            "document_deltas": [deltas[key][1] for key in changed],
        }
        await conn.execute(Q["record_term_deltas"], params)
    totals = {}
    for language in sorted(before.totals.keys() | after.totals.keys()):
        old = before.totals.get(language, (0, 0, 0))
        new = after.totals.get(language, (0, 0, 0))
        if old != new:
            totals[language] = tuple(n - o for n, o in zip(new, old, strict=True))
    if totals:
        await conn.execute(
            Q["record_corpus_deltas"],
            {
                "languages": list(totals),
                "chunks": [t[0] for t in totals.values()],
                "terms": [t[1] for t in totals.values()],
                "documents": [t[2] for t in totals.values()],
            },
        )
    return bool(changed) or bool(totals)


async def _record_statistics(
    conn: psycopg.AsyncConnection, document_id: int, before: Statistics
) -> psycopg.AsyncCursor:
    """Record what the document's write changed in the statistics, `before` being what the
    document contributed before it (index.sql, record_document_statistics). Its one row, read
    when the caller needs it: how many delta rows were recorded."""
    terms = sorted(before.terms)
    totals = sorted(before.totals)
    return await conn.execute(
        Q["record_document_statistics"],
        {
            "document_id": document_id,
            "languages": [language for language, _ in terms],
            "terms": [term for _, term in terms],
            "chunks": [before.terms[key][0] for key in terms],
            "documents": [before.terms[key][1] for key in terms],
            "total_languages": totals,
            "total_chunks": [before.totals[language][0] for language in totals],
            "total_lexemes": [before.totals[language][1] for language in totals],
            "total_documents": [before.totals[language][2] for language in totals],
        },
    )


async def write_document(
    conn: psycopg.AsyncConnection,
    *,
    root: str,
    document: ParsedDocument,
    chunks: Sequence[Chunk],
    vectors: np.ndarray,
    info: FileInfo | None,
    chunking: str,
    embedding_space: str,
    parent_id: int | None = None,
    language: str | None = None,
) -> int:
    """Replace the document's chunks (`vectors` of `embedding_space`); returns its id. One transaction.

    `language`: the text search configuration of its postings (pgrecall.worker.language);
    None detects it among the default languages.

    A chunk the document already holds with an equal write key (write_key: its text, heading,
    keyword text, language and vector) keeps its row, moved to its new ordinal: no new HNSW
    entry, no new postings; only the other chunks are staged and inserted. The rows end as a from-scratch write leaves them but for ids and the kept
    postings' impacts (computed with the corpus' average length when they were written).

    The commit does not wait for the disk (index.sql, commit_without_flush): the job that called
    this completes in a transaction that does."""
    if language is None:
        language = document_language(document.metadata, (section.text for section in document.sections))
    async with conn.transaction():
        # Statements go in two pipelines (psycopg's pipeline mode), whose statements travel
        # together and wait once, where a result is read or the pipeline ends: with BEGIN, the
        # COPY between them (which a pipeline cannot hold) and COMMIT, a new document's write
        # waits on the server 7 times instead of 14 (test_write_round_trips.py). The server
        # runs them in the order sent; an error surfaces at the next wait and rolls the
        # transaction back as before.
        async with conn.pipeline():
            await conn.execute(Q["commit_without_flush"])
            if chunks:
                await conn.execute(Q["create_staging"])  # the session's, emptied at every commit
            # The space first: before any lock on the chunks (0023).
            space = await _send_embedding_space_id(conn, embedding_space, vectors) if chunks else None
            document_id = await _upsert(
                conn,
                root,
                document,
                len(chunks),
                info,
                parent_id,
                chunking,
                embedding_space,
                language if chunks else None,
            )
            # The upsert holds the row (ON CONFLICT DO UPDATE locks it; an inserted one is
            # ours alone), so the statements after it read chunks no other writer can change.
            keys = await _send_chunk_keys(conn, document_id)
        # Read once the pipeline's end has brought every result.
        space_id = (await space.fetchone())[0] if space is not None else None
        old = await keys.fetchall()
        # A document without chunks has no postings: nothing of it in the statistics yet.
        before = await _statistics_of(conn, [document_id]) if old else NO_STATISTICS
        rows = _rows_to_write(chunks, vectors, language, space_id, whole=document.kind in kinds.CONVERSATIONS)
        kept = _unchanged_rows(old, rows, space_id)  # new ordinal -> the old row it keeps
        kept_ids = [row.id for row in kept.values()]
        new_rows = [row for row in rows if row.chunk.ordinal not in kept]
        if new_rows:
            await _copy_to_staging(conn, new_rows)
        async with conn.pipeline():
            await conn.execute(Q["delete_chunks"], {"document_id": document_id, "kept": kept_ids})
            if chunks:
                await _place_kept(conn, document_id, {ordinal: (row.id, row.ordinal) for ordinal, row in kept.items()})
                await _label_kept(conn, kept, {row.chunk.ordinal: row.chunk for row in rows})
            if new_rows:
                await conn.execute(
                    Q["insert_chunks"], {"document_id": document_id, "config": language, "embedding_space_id": space_id}
                )
                await conn.execute(
                    Q["insert_postings"],
                    {
                        "document_id": document_id,
                        "kept": kept_ids,
                        "config": language,
                        "k1": bm25.K1,
                        "b": bm25.B,
                        "default_average_length": bm25.DEFAULT_AVERAGE_LENGTH,
                    },
                )
            old_length = sum(lexemes for _, lexemes, _ in before.totals.values())
            term_count = await conn.execute(Q["document_term_count"], {"document_id": document_id, "old": old_length})
            # Counts postings and chunks, not lengths: refresh_document_lengths may follow it.
            recorded = await _record_statistics(conn, document_id, before)
        step_moved = await term_count.fetchone()
        if kept_ids and step_moved and step_moved[0]:
            await conn.execute(Q["refresh_document_lengths"], {"document_id": document_id, "kept": kept_ids})
        moved = (await recorded.fetchone())[0] > 0
    if moved:
        await statistics.after_write(conn)
    return document_id


async def ensure_embedding_space(conn: psycopg.AsyncConnection, space: str, dimensions: int) -> int:
    """The id of `space`, added with its HNSW index in a transaction of its own when it is new
    (on an idle connection). Writers call this before their first write: the CREATE INDEX then
    waits only for writes already under way, and no write transaction holds its lock."""
    async with conn.transaction():
        cursor = await conn.execute(Q["embedding_space_id"], {"space": space, "dimensions": dimensions})
        return (await cursor.fetchone())[0]


async def _send_embedding_space_id(
    conn: psycopg.AsyncConnection, space: str, vectors: np.ndarray
) -> psycopg.AsyncCursor:
    """The id of the space of `vectors` (one row per chunk), in the cursor's one row; a space
    nobody added before (ensure_embedding_space) is added here, inside the write's transaction
    (migration 0023)."""
    shape = np.shape(vectors)
    if len(shape) != 2 or not shape[1]:
        raise ValueError(f"vectors of shape {shape}: one row per chunk expected")
    return await conn.execute(Q["embedding_space_id"], {"space": space, "dimensions": int(shape[1])})


# Bumped whenever what a write derives from a chunk's text changes (identifier terms, keyword
# text): rows written before then no longer match and are written again.
WRITE_KEY_VERSION = 1


def write_key(config: str, space_id: int | None, chunk: Chunk, keyword_text: str, vector: np.ndarray) -> str:
    """A digest of everything a chunk's row is computed from (its lexemes from keyword_text under
    `config`, its identifier terms from keyword_text, its vector of embedding space `space_id`):
    rows of equal keys are equal in every column but their position and section labels."""
    digest = hashlib.blake2b(digest_size=20)
    parts = (str(WRITE_KEY_VERSION), config, str(space_id), chunk.heading, chunk.text, str(chunk.token_count))
    for part in (*parts, keyword_text):
        data = part.encode("utf-8", "surrogatepass")
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    digest.update(np.ascontiguousarray(vector, dtype=np.float32).tobytes())
    return digest.hexdigest()


@dataclasses.dataclass(frozen=True)
class RowToWrite:
    chunk: Chunk
    vector: np.ndarray
    keyword_text: str
    key: str


@dataclasses.dataclass(frozen=True)
class ChunkKey:
    """A chunk row as a write compares it (query chunk_write_keys)."""

    id: int
    ordinal: int
    write_key: str | None  # None: written before 0022
    section_key: str | None
    fresh_from: int | None
    embedding_space_id: int | None


def _rows_to_write(
    chunks: Sequence[Chunk], vectors: np.ndarray, config: str, space_id: int | None, whole: bool = False
) -> list[RowToWrite]:
    rows = []
    previous_heading = None
    for chunk, vector in zip(chunks, vectors, strict=True):
        keyword_text = chunk.keyword_text(with_heading=chunk.heading != previous_heading, whole=whole)
        rows.append(RowToWrite(chunk, vector, keyword_text, write_key(config, space_id, chunk, keyword_text, vector)))
        previous_heading = chunk.heading
    return rows


async def _send_chunk_keys(conn: psycopg.AsyncConnection, document_id: int) -> psycopg.AsyncCursor[ChunkKey]:
    """The document's chunks' write keys, in the cursor's rows (read when the caller needs them)."""
    cursor = conn.cursor(row_factory=class_row(ChunkKey))
    await cursor.execute(Q["chunk_write_keys"], {"document_id": document_id})
    return cursor


def _unchanged_rows(old: Sequence[ChunkKey], rows: Sequence[RowToWrite], space_id: int | None) -> dict[int, ChunkKey]:
    """new ordinal -> the old row of an equal write key, its vector in `space_id` as the row says;
    chunks that repeat one another are paired in order."""
    by_key: dict[str, list[ChunkKey]] = {}
    for row in old:
        if row.write_key is not None and row.embedding_space_id == space_id:
            by_key.setdefault(row.write_key, []).append(row)
    kept = {}
    for row in rows:
        if matches := by_key.get(row.key):
            kept[row.chunk.ordinal] = matches.pop(0)
    return kept


async def _label_kept(conn: psycopg.AsyncConnection, kept: dict[int, ChunkKey], chunks: dict[int, Chunk]) -> None:
    """Kept rows take the section labels their chunk has now; only rows that differ are written
    (after an append, none)."""
    changed = [
        (row.id, chunks[ordinal].section_key or None, chunks[ordinal].fresh_from)
        for ordinal, row in kept.items()
        if (row.section_key, row.fresh_from) != (chunks[ordinal].section_key or None, chunks[ordinal].fresh_from)
    ]
    if changed:
        ids, section_keys, fresh_froms = (list(column) for column in zip(*changed, strict=True))
        await conn.execute(
            Q["label_kept_chunks"], {"ids": ids, "section_keys": section_keys, "fresh_froms": fresh_froms}
        )


async def _copy_to_staging(conn: psycopg.AsyncConnection, rows: Sequence[RowToWrite]) -> None:
    """The rows to insert, into the transaction's staging table (create_staging; binary COPY)."""
    async with conn.cursor().copy(Q["copy_staging"]) as copy:
        copy.set_types(["int4", "text", "text", "int4", "vector", "text", "text[]", "text", "int4", "text"])
        for row in rows:
            chunk = row.chunk
            await copy.write_row(
                (
                    chunk.ordinal,
                    chunk.heading,
                    chunk.text,
                    chunk.token_count,
                    row.vector,
                    row.keyword_text,
                    identifier_terms(row.keyword_text),
                    chunk.section_key or None,
                    chunk.fresh_from,
                    row.key,
                )
            )


async def _place_kept(conn: psycopg.AsyncConnection, document_id: int, kept: dict[int, tuple[int, int]]) -> None:
    moved = {ordinal: row_id for ordinal, (row_id, old_ordinal) in kept.items() if old_ordinal != ordinal}
    if moved:
        await conn.execute(Q["park_moved_chunks"], {"ids": list(moved.values()), "ordinals": list(moved)})
        await conn.execute(Q["place_moved_chunks"], {"document_id": document_id})


async def _upsert(
    conn: psycopg.AsyncConnection,
    root: str,
    document: ParsedDocument,
    chunk_count: int,
    info: FileInfo | None,
    parent_id: int | None,
    chunking: str | None,
    embedding_space: str | None,
    language: str | None = None,
) -> int:
    params: dict[str, Any] = {
        "root": root,
        "path": document.path,
        "parent_id": parent_id,
        "kind": document.kind,
        "content_hash": document.content_hash,
        "size_bytes": info.size_bytes if info else None,
        "mtime": info.mtime if info else None,
        "title": document.title,
        "metadata": Jsonb(document.metadata),
        "chunk_count": chunk_count,
        "chunking": chunking,
        "embedding_space": embedding_space,
        "redactions": Jsonb(document.redactions),
        "project": project_of(document.project) if document.project else None,
        "occurred_at": document.occurred_at,
        "language": language,
    }
    cursor = await conn.execute(Q["upsert_document" if parent_id is None else "upsert_child"], params)
    return (await cursor.fetchone())[0]


async def record_container(
    conn: psycopg.AsyncConnection, *, root: str, path: str, kind: str, info: FileInfo, chunking: str
) -> int:
    """The row of a file that holds other documents (a Claude export), titled by its file name."""
    title = path.rsplit("/", 1)[-1]
    container = ParsedDocument(path=path, kind=kind, title=title, content_hash=info.content_hash or "", sections=[])
    async with conn.transaction():
        return await _upsert(conn, root, container, 0, info, None, chunking, None)


@dataclasses.dataclass(frozen=True)
class Failure:
    """Why the file at `path` is not indexed, as record_failure stores it."""

    root: str
    path: str
    kind: str
    stage: str
    error: str
    info: FileInfo | None
    # A file that must not be in the index at all (a link leading out of the root):
    # chunks of an earlier version go too.
    forget_indexed: bool = False


async def record_failure(conn: psycopg.AsyncConnection, failure: Failure, *, chunking: str) -> None:
    """Record why a file is not indexed. Chunks of an earlier, good version stay
    searchable, unless `failure.forget_indexed`."""
    info = failure.info
    params = {
        "root": failure.root,
        "path": failure.path,
        "kind": failure.kind,
        "content_hash": info.content_hash if info else None,
        "size_bytes": info.size_bytes if info else None,
        "mtime": info.mtime if info else None,
        "title": failure.path.rsplit("/", 1)[-1],
        "error": failure.error,
        "error_stage": failure.stage,
        "chunking": chunking,
    }
    async with conn.transaction():
        if failure.forget_indexed:
            await remove(conn, root=failure.root, path=failure.path, exact=True)
        await conn.execute(Q["record_failure"], params)


async def remove(conn: psycopg.AsyncConnection, *, root: str, path: str, exact: bool = False) -> int:
    """Remove the file at `path` (with an export's conversations) or, unless `exact`, a folder's files."""
    async with conn.transaction():
        cursor = await conn.execute(Q["documents_at" if exact else "documents_to_remove"], {"root": root, "path": path})
        return await _delete(conn, [row[0] for row in await cursor.fetchall()])


async def remove_children(conn: psycopg.AsyncConnection, parent_id: int, paths: Sequence[str]) -> int:
    """Remove conversations of one export by path."""
    if not paths:
        return 0
    async with conn.transaction():
        cursor = await conn.execute(Q["children_at"], {"parent_id": parent_id, "paths": list(paths)})
        return await _delete(conn, [row[0] for row in await cursor.fetchall()])


async def _delete(conn: psycopg.AsyncConnection, ids: list[int]) -> int:
    """Delete documents (children listed too, for the statistics) inside the caller's
    transaction; returns how many were deleted (a concurrent removal may have taken some)."""
    if not ids:
        return 0
    # Locked first, then read: statistics read before the lock may be of chunks that a
    # concurrent rewrite replaces (the DELETE then removes the new ones), or of a document
    # a concurrent removal takes (the DELETE then removes nothing).
    cursor = await conn.execute(Q["lock_documents"], {"document_ids": ids})
    locked = [row[0] for row in await cursor.fetchall()]
    if not locked:
        return 0
    cursor = await conn.execute(Q["lock_children"], {"parent_ids": locked, "locked": locked})
    locked += [row[0] for row in await cursor.fetchall()]
    before = await _statistics_of(conn, locked)
    await conn.execute(Q["delete_documents"], {"document_ids": locked})
    await _move_statistics(conn, before, NO_STATISTICS)
    return len(locked)


async def file_states(conn: psycopg.AsyncConnection, root: str, space: str) -> dict[str, FileState]:
    """path -> state of the root's files as last indexed; other_space against `space`."""
    async with conn.cursor(row_factory=class_row(FileState)) as cursor:
        await cursor.execute(Q["file_states"], {"root": root, "space": space})
        return {state.path: state for state in await cursor.fetchall()}


async def held_paths(conn: psycopg.AsyncConnection, root: str, paths: Sequence[str]) -> set[str]:
    """Of `paths`, those of the root's files the index has a row for (as file_states sees them)."""
    async with conn.cursor(row_factory=scalar_row) as cursor:
        await cursor.execute(Q["held_paths"], {"root": root, "paths": list(paths)})
        return set(await cursor.fetchall())


async def files_of_other_space(conn: psycopg.AsyncConnection, space: str) -> dict[str, list[str]]:
    """root -> paths of its files with vectors of another embedding space than `space`."""
    async with conn.cursor(row_factory=scalar_row) as cursor:
        await cursor.execute(Q["indexed_roots"])
        roots = await cursor.fetchall()
    files: dict[str, list[str]] = {}
    for root in roots:
        stale = sorted(path for path, state in (await file_states(conn, root, space)).items() if state.other_space)
        if stale:
            files[root] = stale
    return files


async def rename(conn: psycopg.AsyncConnection, *, root: str, source: str, destination: str) -> int:
    """Move documents at `source` (a file, folder or export) to `destination`; returns how many moved.

    A file renamed onto another replaces it; with nothing indexed at `source`
    (already moved by an earlier job) nothing changes.
    """
    async with conn.transaction():
        cursor = await conn.execute(Q["documents_to_remove"], {"root": root, "path": source})
        if not await cursor.fetchall():
            return 0
        await remove(conn, root=root, path=destination, exact=True)
        cursor = await conn.execute(Q["rename_documents"], {"root": root, "source": source, "destination": destination})
        moved = await cursor.fetchall()
        if not moved:
            return 0
        ids, old_paths, new_paths = (list(column) for column in zip(*moved, strict=True))
        cursor = await conn.execute(Q["rename_children"], {"ids": ids, "old_paths": old_paths, "new_paths": new_paths})
        return len(moved) + cursor.rowcount


async def upsert_root(
    conn: psycopg.AsyncConnection, name: str, path: str, archive_folder: str | None = None, project: str | None = None
) -> None:
    """Register a root; `project` (the config's, normalised) is its documents' where they name none."""
    async with conn.transaction():
        await conn.execute(Q["lock_roots"], {"key": locks.ROOTS_LOCK_KEY})
        cursor = await conn.execute(Q["root_project"], {"path": path})
        old = await cursor.fetchone()
        await conn.execute(Q["upsert_root"], {"name": name, "path": path, "archive_folder": archive_folder})
        await conn.execute(Q["set_root_project"], {"name": name, "project": project})
        if old is not None and old[0] != project:
            await conn.execute(Q["root_project_to_documents"], {"path": path, "project": project, "old": old[0]})


async def root_paths(conn: psycopg.AsyncConnection) -> list[str]:
    """The folders of the registered roots."""
    async with conn.cursor(row_factory=scalar_row) as cursor:
        await cursor.execute(Q["root_paths"])
        return await cursor.fetchall()


async def archive_folder(conn: psycopg.AsyncConnection, root: str) -> str | None:
    """Where the root keeps copies of its files (worker/archive.py); None for a root that is no archive."""
    async with conn.cursor(row_factory=scalar_row) as cursor:
        await cursor.execute(Q["root_archive_folder"], {"root": root})
        return await cursor.fetchone()


async def files_at_or_under(conn: psycopg.AsyncConnection, root: str, path: str) -> list[str]:
    async with conn.cursor(row_factory=scalar_row) as cursor:
        await cursor.execute(Q["files_at_or_under"], {"root": root, "path": path})
        return await cursor.fetchall()


async def archive_file(conn: psycopg.AsyncConnection, root: str, path: str, copy: str) -> int:
    """Mark the file's documents archived (kept at `copy`); returns how many were marked."""
    cursor = await conn.execute(Q["archive_file"], {"root": root, "path": path, "copy": copy})
    return cursor.rowcount


async def unarchive_file(conn: psycopg.AsyncConnection, root: str, path: str) -> None:
    await conn.execute(Q["unarchive_file"], {"root": root, "path": path})


@dataclasses.dataclass(frozen=True)
class ArchivedFile:
    path: str
    copy: str


async def archived_files(conn: psycopg.AsyncConnection, root: str) -> list[ArchivedFile]:
    async with conn.cursor(row_factory=class_row(ArchivedFile)) as cursor:
        await cursor.execute(Q["archived_files"], {"root": root})
        return await cursor.fetchall()
