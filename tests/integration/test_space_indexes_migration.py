"""Migration 0023 turns an index of 384-dimension vectors into one HNSW index per embedding space
in place: no vector changes, none is embedded again, and each space's searches read its own index."""

from __future__ import annotations

import asyncio

import numpy as np
import psycopg
import pytest
from pgvector.psycopg import register_vector

from pgrecall.api import read_queries as read_store
from pgrecall.postgres import database
from pgrecall.postgres.migrator import bundled_migrations, migrate
from pgrecall.worker import store
from pgrecall.worker.document import Chunk, ParsedDocument, Section

TORCH = "all-MiniLM-L6-v2@sha256:53aa51172d14/384/torch"
INT8 = "all-MiniLM-L6-v2@sha256:53aa51172d14/384/onnx-int8"
# path -> space (None: indexed before spaces were recorded), as an index half-way through a re-embed holds them
DOCUMENTS = {f"torch/{i}.md": TORCH for i in range(6)} | {f"int8/{i}.md": INT8 for i in range(6)}
DOCUMENTS |= {"old/unrecorded.md": None}


def _unit_vectors(count: int, seed: int) -> np.ndarray:
    vectors = np.random.default_rng(seed).standard_normal((count, 384)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def _write_old_index(conn: psycopg.Connection) -> None:
    """Documents of two spaces and one unrecorded, three chunks each, written as rows of the old schema."""
    for number, (path, space) in enumerate(DOCUMENTS.items()):
        document_id = conn.execute(
            """INSERT INTO pgrecall.documents (source_root, path, kind, content_hash, chunk_count, embedding_space)
               VALUES ('/old', %s, 'markdown', %s, 3, %s) RETURNING id""",
            (path, f"hash-{number}", space),
        ).fetchone()[0]
        for ordinal, vector in enumerate(_unit_vectors(3, number)):
            conn.execute(
                """INSERT INTO pgrecall.chunks (document_id, ordinal, text, token_count, embedding, fts, term_count)
                   VALUES (%s, %s, %s, 4, %s, to_tsvector('english', %s), 4)""",
                (document_id, ordinal, f"chunk {ordinal} of {path}", vector, f"chunk {ordinal} of {path}"),
            )


def _vectors(conn: psycopg.Connection) -> dict[tuple[str, int], str]:
    found = conn.execute(
        """SELECT d.path, c.ordinal, md5(c.embedding::text) FROM pgrecall.chunks c
           JOIN pgrecall.documents d ON d.id = c.document_id"""
    )
    return {(path, ordinal): digest for path, ordinal, digest in found}


def test_an_index_of_384_dimensions_gets_one_hnsw_index_per_space_without_reembedding(empty_db_url):
    with database.connect(empty_db_url) as conn:
        migrate(conn, migrations=[m for m in bundled_migrations() if m.name < "0023"])
        register_vector(conn)
        _write_old_index(conn)
        conn.commit()
        before = _vectors(conn)
        file_before = conn.execute("SELECT pg_relation_filenode('pgrecall.chunks')").fetchone()[0]
        conn.commit()  # migrate runs its own transaction
        assert migrate(conn, migrations=[m for m in bundled_migrations() if m.name < "0024"]) == [
            "0023_embedding_spaces.sql"
        ]
        # The column lost its typmod without the table being rewritten.
        assert conn.execute("SELECT pg_relation_filenode('pgrecall.chunks')").fetchone()[0] == file_before

        assert _vectors(conn) == before  # every vector as it was
        spaces = dict(conn.execute("SELECT space, id FROM pgrecall.embedding_spaces").fetchall())
        assert set(spaces) == {TORCH, INT8}
        assert conn.execute("SELECT DISTINCT dimensions FROM pgrecall.embedding_spaces").fetchall() == [(384,)]
        labelled = conn.execute(
            """SELECT d.embedding_space, c.embedding_space_id, count(*) FROM pgrecall.chunks c
               JOIN pgrecall.documents d ON d.id = c.document_id GROUP BY 1, 2"""
        ).fetchall()
        assert sorted(labelled, key=str) == sorted(
            [(TORCH, spaces[TORCH], 18), (INT8, spaces[INT8], 18), (None, None, 3)], key=str
        )
        column = conn.execute(
            """SELECT format_type(atttypid, atttypmod) FROM pg_attribute
               WHERE attrelid = 'pgrecall.chunks'::regclass AND attname = 'embedding'"""
        ).fetchone()[0]
        assert column == "vector"  # any width from now on
        indexes = dict(
            conn.execute(
                """SELECT c.relname, i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
                   WHERE i.indrelid = 'pgrecall.chunks'::regclass AND c.relam = (SELECT oid FROM pg_am WHERE amname = 'hnsw')"""
            ).fetchall()
        )
        assert indexes == {
            f"chunks_embedding_space_{spaces[TORCH]}": True,
            f"chunks_embedding_space_{spaces[INT8]}": True,
        }

        # Each space's nearest neighbours through its own index: a stored vector finds itself.
        conn.execute("SET enable_seqscan = off")
        query = _unit_vectors(3, list(DOCUMENTS).index("int8/2.md"))[1]
        session = read_store.ReadSession(conn, None, ef_search=40)
        space = session.query_space(INT8)
        assert space[:2] == (spaces[INT8], 384)  # its id and width (then its estimated size)
        nearest = session.vector_arm(query, 5, space=space)
        assert nearest[0].similarity == pytest.approx(1.0, abs=1e-5)
        found = conn.execute(
            "SELECT d.path, c.ordinal FROM pgrecall.chunks c JOIN pgrecall.documents d ON d.id = c.document_id WHERE c.id = %s",
            (nearest[0].chunk_id,),
        ).fetchone()
        assert found == ("int8/2.md", 1)
        plan = conn.execute(
            psycopg.sql.SQL("EXPLAIN ") + read_store.vector_arm_query("vector_arm", False, space.id, 384),
            {**read_store._filter_values(None), "embedding": query, "limit": 5},
        ).fetchall()
        assert any(f"chunks_embedding_space_{space.id}" in line for (line,) in plan)
        conn.rollback()

    # Today's write path (on today's schema: the migrations after 0023 too) adds a chunk to an
    # existing space under that space's id.
    with database.connect(empty_db_url) as conn:
        migrate(conn)
    asyncio.run(_write_one(empty_db_url, INT8))
    with psycopg.connect(empty_db_url) as conn:
        written = conn.execute(
            """SELECT c.embedding_space_id FROM pgrecall.chunks c JOIN pgrecall.documents d ON d.id = c.document_id
               WHERE d.path = 'new.md'"""
        ).fetchall()
        assert written == [(spaces[INT8],)]


async def _write_one(url: str, space: str) -> None:
    conn = await psycopg.AsyncConnection.connect(url)
    await database.configure_connection_async(conn)
    async with conn:
        document = ParsedDocument(
            path="new.md", kind="markdown", title="new", content_hash="new", sections=[Section("", "a new note")]
        )
        await store.write_document(
            conn,
            root="/old",
            document=document,
            chunks=[Chunk(ordinal=0, heading="", text="a new note", token_count=3)],
            vectors=_unit_vectors(1, 99),
            info=None,
            chunking="test",
            embedding_space=space,
        )
