"""A search's round trips to the server, counted on the wire, and the sessions that save them.

The count comes from libpq's own trace of the connection: every message the client sends
that waits for the server's answer (a simple Query, or the Sync closing an extended query).
"""

from __future__ import annotations

import os
import tempfile

import psycopg
import pytest

from pgrecall.api import read_queries as store
from pgrecall.api.searcher import Searcher
from tests.notes import ERROR_CODE_NOTES, write_notes

QUERY = "tomatoes ripen on the south bed"  # one keyword hit, no exact tie: no facts to read after fusion


@pytest.fixture
def one_connection(index, settings, db_url, embedder, tmp_path):
    index(write_notes(tmp_path / "notes", ERROR_CODE_NOTES))
    with Searcher(db_url, settings, embedder=embedder, pool_size=1) as searcher:
        yield searcher


def round_trips(searcher: Searcher, **search) -> int:
    """Messages that wait for the server while `searcher` runs one search on its one connection."""
    searcher.search(QUERY, **search)  # warm: the embedder and the statements are ready
    with tempfile.TemporaryFile("w+") as trace:
        with searcher.pool.connection() as conn:
            conn.pgconn.trace(trace.fileno())
        try:
            hits = searcher.search(QUERY, **search)
        finally:
            with searcher.pool.connection() as conn:
                conn.pgconn.untrace()
        assert hits  # the search searched
        trace.seek(0, os.SEEK_SET)
        sent = [line.split("\t") for line in trace.read().splitlines()]
    return sum(1 for fields in sent if "F" in fields and ("Query" in fields or "Sync" in fields))


def test_a_keyword_search_is_two_round_trips(one_connection):
    # The keyword arm and the hits' rows: no HNSW settings for an arm it never runs (two round trips
    # before), and no BEGIN and COMMIT around reads that need no one transaction (two more).
    assert round_trips(one_connection, mode="keyword") == 2


def test_statements_outside_a_transaction_are_read_only_too(one_connection):
    """A keyword search's statements run without BEGIN READ ONLY (store.statements), on the pool's
    connections, which refuse writes all the same, whatever rights the login has."""
    with one_connection.pool.connection() as conn, store.statements(conn):
        assert conn.execute("SHOW default_transaction_read_only").fetchone()[0] == "on"
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
            conn.execute("CREATE TEMP TABLE written (x int)")
    with one_connection.pool.connection() as conn:
        assert not conn.autocommit  # given back as it came: searches with vectors run in a transaction
        assert conn.execute("SELECT 1").fetchone() == (1,)


def test_a_hybrid_search_is_five_round_trips(one_connection):
    # The spaces with their ids and sizes, both arms, the index's languages (fusion), the hits. No
    # BEGIN and COMMIT, and the HNSW settings are the connection's, set by the search before
    # (round_trips warms): 8 before (BEGIN, settings, spaces, arms, languages, hits, COMMIT).
    assert round_trips(one_connection, mode="hybrid") == 5
    assert round_trips(one_connection, mode="vector") == 3  # no keyword arm: 6 before


def test_the_hnsw_settings_are_set_once_per_connection_and_again_when_they_change(one_connection):
    vector = one_connection.embedder.embed_queries([QUERY])[0]
    with one_connection.pool.connection() as conn, store.statements(conn):
        store.ReadSession(conn, None, ef_search=None)._set_hnsw(77)
        assert conn.execute("SELECT current_setting('hnsw.ef_search')").fetchone()[0] == "77"
        session = store.ReadSession(conn, None, ef_search=123)
        space = session.query_space(one_connection.embedder.space)
        session.vector_arm(vector, 10, space=space)
        assert conn.execute(
            "SELECT current_setting('hnsw.ef_search'), current_setting('hnsw.iterative_scan')"
        ).fetchone() == ("123", "relaxed_order")
    with one_connection.pool.connection() as conn, conn.transaction():
        store.ReadSession(conn, None, ef_search=55)  # a transaction's own, given back at its end
        assert conn.execute("SELECT current_setting('hnsw.ef_search')").fetchone()[0] == "55"
    with one_connection.pool.connection() as conn:
        assert conn.execute("SELECT current_setting('hnsw.ef_search')").fetchone()[0] == "123"
        conn.rollback()


def test_a_session_without_vectors_sets_nothing_and_has_no_vector_arm(one_connection):
    with one_connection.pool.connection() as conn, conn.transaction():
        session = store.ReadSession(conn, None, ef_search=123, vectors=False)
        assert conn.execute("SELECT current_setting('hnsw.ef_search', true)").fetchone()[0] != "123"
        assert session.keyword_arm("export", limit=10, depth=100)
        with pytest.raises(RuntimeError, match="vectors=False"):
            session.vector_arm(one_connection.embedder.embed_queries(["export"])[0], 10, space=None)
    with one_connection.pool.connection() as conn, conn.transaction():
        store.ReadSession(conn, None, ef_search=123)
        settings = conn.execute(
            "SELECT current_setting('hnsw.ef_search'), current_setting('hnsw.iterative_scan')"
        ).fetchone()
        assert settings == ("123", "relaxed_order")


def test_exact_vectors_rank_as_the_exact_query_and_never_read_the_hnsw_index(one_connection, db_url):
    vector = one_connection.embedder.embed_queries([QUERY])[0]

    def hnsw_scans_of(**session) -> int:
        with psycopg.connect(db_url) as observer:
            before = _hnsw_scans(observer)
            with one_connection.pool.connection() as conn, conn.transaction():
                conn.execute("SET LOCAL enable_seqscan = off")  # four chunks: show the index path
                reading = store.ReadSession(conn, None, ef_search=40, **session)
                hits = reading.vector_arm(vector, 10, space=reading.query_space(one_connection.embedder.space))
                assert len(hits) == 4
                conn.execute("SELECT pg_stat_force_next_flush()")  # counted before the server answers COMMIT
            return _hnsw_scans(observer) - before

    assert hnsw_scans_of() >= 1  # the approximate arm does read the index: the count counts
    assert hnsw_scans_of(exact_vectors=True) == 0
    with one_connection.pool.connection() as conn, conn.transaction():
        exact = store.ReadSession(conn, None, ef_search=40, exact_vectors=True)
        space = exact.query_space(one_connection.embedder.space)
        plain = store.ReadSession(conn, None, ef_search=40)
        assert exact.vector_arm(vector, 10, space=space) == plain.vector_arm(vector, 10, exact=True, space=space)


def _hnsw_scans(conn: psycopg.Connection) -> int:
    """Scans of the chunks' HNSW indexes so far (pg_stat_user_indexes), read fresh."""
    conn.execute("SELECT pg_stat_clear_snapshot()")
    row = conn.execute(
        "SELECT coalesce(sum(s.idx_scan), 0)::bigint FROM pg_stat_user_indexes s"
        " JOIN pg_class c ON c.oid = s.indexrelid JOIN pg_am a ON a.oid = c.relam WHERE a.amname = 'hnsw'"
    ).fetchone()
    conn.commit()
    return row[0]
