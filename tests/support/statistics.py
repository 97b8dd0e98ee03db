"""Reading rows, and checking the BM25 statistics the worker maintains against a recount."""

import hashlib

import numpy as np
import psycopg

from pgrecall.embedders.embedding import DIMENSIONS
from pgrecall.postgres import database
from pgrecall.worker import store
from pgrecall.worker.adapters import markdown
from pgrecall.worker.chunk import chunk_sections


def rows(url, query, params=()):
    with psycopg.connect(url) as conn:
        return conn.execute(query, params).fetchall()


# Per language (0024): a term's statistics, and the totals, count that language's chunks alone.
EFFECTIVE_TERM_STATS = """
    SELECT language, term, sum(df)::int, sum(document_df)::int
    FROM (SELECT language, term, df, document_df FROM pgrecall.term_stats
          UNION ALL SELECT language, term, df, document_df FROM pgrecall.term_stat_deltas) s
    GROUP BY language, term HAVING sum(df) <> 0 OR sum(document_df) <> 0"""
EFFECTIVE_CORPUS_STATS = """
    SELECT language, sum(chunk_count)::bigint, sum(term_total)::bigint, sum(document_count)::bigint
    FROM (SELECT language, chunk_count, term_total, document_count FROM pgrecall.corpus_stats
          UNION ALL SELECT language, chunk_count, term_total, document_count FROM pgrecall.corpus_stat_deltas) s
    GROUP BY language HAVING sum(chunk_count) <> 0 OR sum(term_total) <> 0 OR sum(document_count) <> 0
    ORDER BY language"""
RECOUNTED_TERM_STATS = """
    SELECT p.language, p.term, count(*)::int, count(DISTINCT c.document_id)::int
    FROM pgrecall.postings p JOIN pgrecall.chunks c ON c.id = p.chunk_id GROUP BY p.language, p.term"""
RECOUNTED_CORPUS_STATS = """
    SELECT language, count(*), coalesce(sum(term_count), 0), count(DISTINCT document_id)
    FROM pgrecall.chunks GROUP BY language ORDER BY language"""
FOLDED_CORPUS_STATS = """
    SELECT language, chunk_count, term_total, document_count FROM pgrecall.corpus_stats
    WHERE (chunk_count, term_total, document_count) <> (0, 0, 0) ORDER BY language"""


def fold_statistics(url):
    """Fold the BM25 statistics' deltas into their base rows, as the worker does (0013)."""
    from pgrecall.postgres import queries
    from pgrecall.worker.statistics import FOLD_LOCK_KEY

    q = queries.load("index.sql")
    with psycopg.connect(url) as conn:
        assert conn.execute(q["fold_lock"], {"key": FOLD_LOCK_KEY}).fetchone()[0]
        conn.execute(q["fold_term_stats"])
        conn.execute(q["fold_corpus_stats"])


def assert_statistics_consistent(url):
    """The maintained BM25 statistics (base rows plus deltas) equal what the postings and chunks say,
    and still do once the deltas are folded into the base rows, with no zero-count term left."""
    recomputed = {(lang, t): (df, ddf) for lang, t, df, ddf in rows(url, RECOUNTED_TERM_STATS)}
    recounted_corpus = rows(url, RECOUNTED_CORPUS_STATS)
    assert {(lang, t): (df, ddf) for lang, t, df, ddf in rows(url, EFFECTIVE_TERM_STATS)} == recomputed
    assert rows(url, EFFECTIVE_CORPUS_STATS) == recounted_corpus
    fold_statistics(url)
    assert rows(url, "SELECT count(*) FROM pgrecall.term_stat_deltas") == [(0,)]
    assert rows(url, "SELECT count(*) FROM pgrecall.corpus_stat_deltas") == [(0,)]
    maintained = {
        (lang, t): (df, ddf)
        for lang, t, df, ddf in rows(url, "SELECT language, term, df, document_df FROM pgrecall.term_stats")
    }
    assert maintained == recomputed
    assert rows(url, FOLDED_CORPUS_STATS) == recounted_corpus
    # A chunk's postings and its document have its language.
    assert rows(
        url,
        """SELECT count(*) FROM pgrecall.postings p JOIN pgrecall.chunks c ON c.id = p.chunk_id
           JOIN pgrecall.documents d ON d.id = c.document_id
           WHERE p.language <> c.language OR d.language IS DISTINCT FROM c.language""",
    ) == [(0,)]
    assert (
        rows(
            url,
            """SELECT d.path FROM pgrecall.documents d
           WHERE d.term_count <> (SELECT coalesce(sum(term_count), 0) FROM pgrecall.chunks c WHERE c.document_id = d.id)""",
        )
        == []
    )
    assert (
        rows(
            url,
            """SELECT d.path FROM pgrecall.documents d
           WHERE d.chunk_count <> (SELECT count(*) FROM pgrecall.chunks c WHERE c.document_id = d.id)
             AND d.error IS NULL""",
        )
        == []
    )


# A small corpus written straight through the store, with random unit vectors (no model).
ROOT = "/statistics-test"
SPACE = "statistics-test-space"
COMMON = "Replication lag grows when the primary checkpoints; vacuum and autovacuum settings matter."


def note(path: str, text: str):
    document = markdown.parse(path, text, hashlib.sha256(text.encode()).hexdigest())
    chunks = chunk_sections(document.sections, lambda texts: [len(t.split()) for t in texts], max_tokens=24)
    rng = np.random.default_rng(len(text))
    vectors = rng.standard_normal((len(chunks), DIMENSIONS))
    vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)
    return document, chunks, vectors


async def write(conn, path: str, text: str, *, parent_id: int | None = None, language: str | None = None) -> int:
    """Write `text` as the document at `path` (a conversation of the export `parent_id`, if given),
    in `language` (a text search configuration), else in the one detected."""
    document, chunks, vectors = note(path, text)
    return await write_parts(conn, document, chunks, vectors, parent_id=parent_id, language=language)


async def write_parts(
    conn, document, chunks, vectors, *, parent_id: int | None = None, language: str | None = None
) -> int:
    """Write a document already parsed, cut and embedded (note's three parts, changed or not)."""
    return await store.write_document(
        conn,
        root=ROOT,
        document=document,
        chunks=chunks,
        vectors=vectors,
        info=None,
        chunking="test",
        embedding_space=SPACE,
        parent_id=parent_id,
        language=language,
    )


async def connect(url: str) -> psycopg.AsyncConnection:
    conn = await psycopg.AsyncConnection.connect(url)
    await database.configure_connection_async(conn)
    # As an Indexer does before its first write: the space (and its HNSW index) is added in a
    # transaction of its own, so no write transaction ever makes the index (0023).
    await store.ensure_embedding_space(conn, SPACE, DIMENSIONS)
    return conn
