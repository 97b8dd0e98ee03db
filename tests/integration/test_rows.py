"""Rows as typed records by column name.

Each typed query's SELECT names exactly its record's fields, in order, on a
database the migrations built: a column renamed, added or reordered fails here
instead of shifting values into the wrong field. Then the records of real rows
(written by the write path, no model) carry each value under its own name.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import inspect

import numpy as np
import pytest

from pgrecall import bm25, kinds
from pgrecall.api import keyword
from pgrecall.api import read_queries as read_store
from pgrecall.postgres import database, queries
from pgrecall.status import QUEUE
from pgrecall.worker import service, store
from pgrecall.worker.document import Chunk, ParsedDocument, Section

SPACE = "test-space"
DIMENSIONS = 384


def _unit(position: int) -> np.ndarray:
    vector = np.zeros(DIMENSIONS, dtype=np.float32)
    vector[position] = 1.0
    return vector


def _fields(record_type) -> list[str]:
    if inspect.isfunction(record_type) or inspect.ismethod(record_type):  # rows built by keyword (kwargs_row)
        return list(inspect.signature(record_type).parameters)
    if dataclasses.is_dataclass(record_type):
        return [field.name for field in dataclasses.fields(record_type)]
    return list(record_type._fields)  # a NamedTuple


def _search_params() -> dict:
    return {
        **read_store._filter_values(None),
        "embedding": _unit(0),
        "limit": 10,
        "query": "bicycle",
        "identifiers": [],
        "languages": None,
        "k1": bm25.K1,
        "b": bm25.B,
        "depth": 100,
    }


WRITE = queries.load("index.sql")
SERVICE = queries.load("service.sql")
SEARCH = queries.load("search.sql")
TYPED_QUERIES = [
    ("document_state", WRITE["document_state"], store.DocumentState, {"root": "/r", "path": "a.md", "space": SPACE}),
    ("child_documents", WRITE["child_documents"], store.ChildState, {"parent_id": 1, "space": SPACE}),
    ("file_states", WRITE["file_states"], store.FileState, {"root": "/r", "space": SPACE}),
    ("chunk_write_keys", WRITE["chunk_write_keys"], store.ChunkKey, {"document_id": 1}),
    ("service_status", SERVICE["service_status"], service.ServiceStatus, {"queue": QUEUE}),
    (
        "fetch_hits",
        SEARCH["fetch_hits"],
        read_store.ChunkRow,
        {
            "chunk_ids": [1],
            "embedding": None,
            "space_id": None,
            "query": "bicycle",
            "identifiers": [],
            "stop_languages": ["english"],
        },
    ),
    (
        "passage_chunks",
        SEARCH["passage_chunks"],
        read_store.PassageChunk,
        {"document_ids": [1], "firsts": [0], "lasts": [2]},
    ),
    ("query_spaces", read_store.QUERY_SPACES, read_store.IndexedSpace, {}),
    *(
        (
            f"{name}{' filtered' if filtered else ''}",
            text if name == "keyword_postings" else read_store.vector_arm_query(name, filtered, 1, DIMENSIONS),
            keyword.TermRow if name == "keyword_postings" else read_store.VectorHit,
            None,
        )
        for (name, filtered), text in read_store.Q.items()
    ),
]


@pytest.mark.parametrize(
    ("sql_text", "record_type", "params"), [case[1:] for case in TYPED_QUERIES], ids=[case[0] for case in TYPED_QUERIES]
)
def test_a_typed_query_selects_exactly_its_records_fields(db_url, sql_text, record_type, params):
    with database.connect(db_url) as conn:
        cursor = conn.execute(sql_text, params if params is not None else _search_params())
        assert [column.name for column in cursor.description] == _fields(record_type)


@pytest.mark.parametrize(("name", "params"), [("document_by_id", {"id": 1}), ("document_by_path", {"path": "a.md"})])
def test_a_documents_query_selects_its_fields_and_the_chunk_count(db_url, name, params):
    with database.connect(db_url) as conn:
        cursor = conn.execute(SEARCH[name], params)
        selected = [column.name for column in cursor.description]
        chunks = conn.execute(SEARCH["document_chunks"], {"id": 1}).description
    fields = _fields(read_store.Document)
    assert [column for column in selected if column != "chunk_count"] == [
        field for field in fields if field != "chunks"
    ]
    assert [column.name for column in chunks] == ["ordinal", "heading", "text", "chunk_id"]  # Document.chunks


def test_every_arm_query_is_checked():
    assert {name for name, _ in read_store.Q} == {"vector_arm", "vector_arm_exact", "keyword_postings"}


MTIME = datetime.datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=datetime.UTC)


def _document(path: str, text: str, digest: str) -> ParsedDocument:
    return ParsedDocument(path=path, kind=kinds.MARKDOWN, title=path, content_hash=digest, sections=[Section("", text)])


async def _write_and_read(url: str):
    pool = await database.open_async_pool(url, max_size=1)
    try:
        return await _write_and_read_with(pool)
    finally:
        await pool.close()


async def _write_and_read_with(pool):
    async with pool.connection() as conn:
        info = store.FileInfo(size_bytes=123, mtime=MTIME, content_hash="note-hash")
        note = _document("note.md", "a note about a bicycle", "note-hash")
        chunk = Chunk(ordinal=0, heading="", text="a note about a bicycle", token_count=5)
        note_id = await store.write_document(
            conn,
            root="/r",
            document=note,
            chunks=[chunk],
            vectors=np.stack([_unit(0)]),
            info=info,
            chunking="v1/test",
            embedding_space=SPACE,
        )
        export_info = store.FileInfo(size_bytes=456, mtime=MTIME, content_hash="export-hash")
        export_id = await store.record_container(
            conn, root="/r", path="export.json", kind=kinds.CLAUDE_EXPORT, info=export_info, chunking="v1/test"
        )
        child = _document("export.json#c1", "a conversation about trains", "child-hash")
        child_chunk = Chunk(ordinal=0, heading="", text="a conversation about trains", token_count=5)
        await store.write_document(
            conn,
            root="/r",
            document=child,
            chunks=[child_chunk],
            vectors=np.stack([_unit(1)]),
            info=export_info,
            chunking="v1/test",
            embedding_space="another-space",
            parent_id=export_id,
        )
        return (
            note_id,
            export_id,
            await store.document_state(conn, "/r", "note.md", SPACE),
            await store.document_state(conn, "/r", "export.json", SPACE),
            await store.child_states(conn, export_id, SPACE),
            await store.file_states(conn, "/r", SPACE),
        )


def test_the_write_paths_records_carry_each_value_under_its_name(db_url):
    note_id, export_id, note, export, children, files = asyncio.run(_write_and_read(db_url))

    assert note == store.DocumentState(
        id=note_id,
        kind="markdown",
        content_hash="note-hash",
        size_bytes=123,
        mtime=MTIME,
        error=None,
        error_stage=None,
        chunking="v1/test",
        other_space=False,
    )
    assert note.is_current("note-hash", "v1/test")
    assert not note.is_current("other-hash", "v1/test")
    assert not note.is_current("note-hash", "v1/other")
    assert export is not None and export.id == export_id and export.other_space  # its conversation's space
    assert not export.is_current("export-hash", "v1/test")

    assert children == {
        "export.json#c1": store.ChildState(
            path="export.json#c1", content_hash="child-hash", error=None, chunking="v1/test", other_space=True
        )
    }
    assert files == {
        "note.md": store.FileState(
            path="note.md",
            size_bytes=123,
            mtime=MTIME,
            content_hash="note-hash",
            chunking="v1/test",
            other_space=False,
        ),
        "export.json": store.FileState(
            path="export.json",
            size_bytes=456,
            mtime=MTIME,
            content_hash="export-hash",
            chunking="v1/test",
            other_space=True,
        ),
    }
    assert files["note.md"].is_current(123, MTIME, "v1/test")
    assert not files["note.md"].is_current(124, MTIME, "v1/test")
    assert not files["export.json"].is_current(456, MTIME, "v1/test")  # vectors of another space


def test_a_child_with_an_error_is_not_current():
    state = store.ChildState(path="e.json#c", content_hash="h", error="boom", chunking="v1", other_space=False)
    assert not state.is_current("h", "v1")
    assert dataclasses.replace(state, error=None).is_current("h", "v1")


def test_the_search_sides_records_carry_each_value_under_its_name(db_url):
    note_id, export_id, *_ = asyncio.run(_write_and_read(db_url))
    with database.connect(db_url) as conn:
        chunk_ids = dict(conn.execute("SELECT document_id, id FROM pgrecall.chunks").fetchall())
        session = read_store.ReadSession(conn, None, ef_search=40)
        nearest = session.vector_arm(_unit(0), 10, exact=True, space=session.query_space(SPACE))
        keyword = session.keyword_arm("bicycle", 10, 100)
        rows = session.fetch(list(chunk_ids.values()))
        spaces = session.embedding_spaces()

    note_chunk = chunk_ids[note_id]
    assert nearest[0] == read_store.VectorHit(chunk_id=note_chunk, similarity=pytest.approx(1.0))
    assert all(isinstance(hit.similarity, float) for hit in nearest)
    assert [hit.chunk_id for hit in keyword] == [note_chunk]
    assert isinstance(keyword[0].score, float) and keyword[0].score > 0
    assert set(spaces) == {SPACE, "another-space"}

    row = rows[note_chunk]
    assert (row.chunk_id, row.document_id, row.source_root, row.path) == (note_chunk, note_id, "/r", "note.md")
    assert (row.kind, row.title, row.heading, row.text) == ("markdown", "note.md", "", "a note about a bicycle")
    assert (row.metadata, row.mtime) == ({}, MTIME)
    child_row = next(r for r in rows.values() if r.path == "export.json#c1")
    assert child_row.document_id != export_id and child_row.chunk_id == chunk_ids[child_row.document_id]
