"""The vector arm's effort chosen for the space it searches (pgrecall.api.vector_effort), on a real index:
whatever it chooses, a filtered search finds the exact top 10."""

from __future__ import annotations

import psycopg
import pytest

from pgrecall.api import read_queries as store
from pgrecall.api import vector_effort
from pgrecall.api.searcher import Searcher
from tests.notes import write_notes

TOPICS = ["tomatoes", "replication", "invoices", "glaciers", "violins", "compilers", "bees", "tax law",
          "orbits", "sourdough", "typhoons", "chess openings"]  # fmt: skip
QUERY = "how do bees pollinate tomatoes in a greenhouse"
FILTER = {"path_prefix": "few/"}  # 12 of 72 notes


def _notes() -> dict[str, str]:
    notes = {}
    for number in range(72):
        folder = "few" if number % 6 == 0 else "bulk"
        first, second = TOPICS[number % len(TOPICS)], TOPICS[(number * 5 + 1) % len(TOPICS)]
        notes[f"{folder}/note{number}.md"] = f"# Note {number}\n\nOn {first}, and what {second} teach us about {first}."
    return notes


@pytest.fixture
def analysed(index, settings, db_url, embedder, tmp_path):
    """72 notes indexed, their statistics gathered (as autovacuum would), and a Searcher of one connection."""
    index(write_notes(tmp_path / "notes", _notes()))
    with psycopg.connect(db_url, autocommit=True) as conn:
        conn.execute("ANALYZE pgrecall.chunks")
        conn.execute("ANALYZE pgrecall.documents")
    with Searcher(db_url, settings, embedder=embedder, pool_size=1) as searcher:
        yield searcher


def _ids(hits: list[store.VectorHit]) -> list[int]:
    return [hit.chunk_id for hit in hits]


def test_the_space_is_sized_without_a_count(analysed):
    with analysed.pool.connection() as conn, conn.transaction():
        session = store.ReadSession(conn, None, ef_search=None)
        space = session.query_space(analysed.embedder.space)
        chunks = conn.execute("SELECT count(*) FROM pgrecall.chunks WHERE embedding_space_id = %s", (space.id,))
        assert space.rows == pytest.approx(chunks.fetchone()[0], rel=0.2)
        assert session.selectivity(space) == 1.0  # no filters


def test_a_small_space_with_a_selective_filter_is_ranked_exactly(analysed):
    vector = analysed.embedder.embed_queries([QUERY])[0]
    with analysed.pool.connection() as conn, conn.transaction():
        session = store.ReadSession(conn, FILTER, ef_search=None)
        space = session.query_space(analysed.embedder.space)
        assert 0 < session.selectivity(space) < 1
        assert session.effort(space, 100).exact
        chosen = session.vector_arm(vector, 10, space=space)
        assert _ids(chosen) == _ids(session.vector_arm(vector, 10, exact=True, space=space))
        paths = conn.execute(
            "SELECT DISTINCT d.path FROM pgrecall.chunks c JOIN pgrecall.documents d ON d.id = c.document_id"
            " WHERE c.id = ANY(%s)",
            (_ids(chosen),),
        ).fetchall()
        assert len(chosen) == 10 and all(path.startswith("few/") for (path,) in paths)


def test_the_graph_read_at_the_chosen_effort_finds_the_exact_top_ten_through_a_filter(analysed):
    """The effort chosen for this filter's selectivity in a space of a million chunks: the graph is read
    (an iterative scan through the filter, at that ef_search), and still finds what exact search finds."""
    vector = analysed.embedder.embed_queries([QUERY])[0]
    with analysed.pool.connection() as conn, conn.transaction():
        sizing = store.ReadSession(conn, FILTER, ef_search=None)
        space = sizing.query_space(analysed.embedder.space)
        effort = vector_effort.choose_effort(1_000_000, sizing.selectivity(space), 100, configured=None)
        assert not effort.exact
        conn.execute("SET LOCAL enable_seqscan = off")  # a few dozen chunks: show the index path
        session = store.ReadSession(conn, FILTER, ef_search=effort.ef_search)
        approximate = session.vector_arm(vector, 100, space=space)[:10]
        assert conn.execute("SELECT current_setting('hnsw.ef_search')").fetchone()[0] == str(effort.ef_search)
        assert _ids(approximate) == _ids(session.vector_arm(vector, 10, exact=True, space=space))


def test_a_configured_ef_search_is_used_as_set(analysed):
    vector = analysed.embedder.embed_queries([QUERY])[0]
    with analysed.pool.connection() as conn, conn.transaction():
        session = store.ReadSession(conn, FILTER, ef_search=123)
        space = session.query_space(analysed.embedder.space)
        assert session.effort(space, 100) == (False, 123)
        session.vector_arm(vector, 10, space=space)
        assert conn.execute("SELECT current_setting('hnsw.ef_search')").fetchone()[0] == "123"


def test_a_search_with_a_filter_finds_what_exact_search_finds(analysed, settings, db_url, embedder):
    with Searcher(db_url, settings, embedder=embedder, pool_size=1, exact_vectors=True) as exact:
        expected = [hit.chunk_id for hit in exact.search(QUERY, k=10, filters=FILTER, mode="vector")]
    found = [hit.chunk_id for hit in analysed.search(QUERY, k=10, filters=FILTER, mode="vector")]
    assert found == expected and len(found) == 10


@pytest.mark.parametrize(
    "filters",
    [
        {"metadata": {"tags": "incident"}},
        {"kind": "markdown", "since": "2020-01-01T00:00:00+00:00"},
        {"modified_since": "2020-01-01T00:00:00+00:00", "project": "garden"},
        {"root": "notes", "source_root": "/nowhere", "before": "2030-01-01T00:00:00+00:00"},
    ],
)
def test_every_filter_field_is_estimated(analysed, filters):
    from pgrecall.contract import validate_filters

    with analysed.pool.connection() as conn, store.statements(conn):
        session = store.ReadSession(conn, validate_filters(filters), ef_search=None)
        space = session.query_space(analysed.embedder.space)
        assert 0 <= session.selectivity(space) <= 1
