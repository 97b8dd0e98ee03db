"""The read side against a real index."""

import datetime

import psycopg
import pytest

from pgrecall.api.searcher import Searcher
from pgrecall.errors import DatabaseUnavailable, InvalidInput
from tests.notes import ERROR_CODE_NOTES, TAGGED_NOTES, write_notes


@pytest.fixture
def indexed(index, tmp_path):
    root = write_notes(tmp_path / "notes", ERROR_CODE_NOTES)
    index(root)
    return root


@pytest.mark.parametrize("fusion", ["rrf", "convex"])
def test_exact_error_code_ranks_its_chunk_first_in_hybrid(indexed, searcher, fusion):
    hybrid = searcher.search("E-4711", k=3, fusion=fusion)
    assert hybrid[0].path == "incidents/e4711.md"
    assert hybrid[0].ranks["keyword"] == 1
    keyword = searcher.search("E-4711", k=3, mode="keyword")
    assert keyword[0].path == "incidents/e4711.md" and keyword[0].score > keyword[1].score
    # The two incident notes differ in one digit: to the dense arm they are
    # near-duplicates, which is why the keyword arm must carry this query.
    vector = searcher.search("E-4711", k=2, mode="vector", enrich_query=False)
    assert {h.path for h in vector} == {"incidents/e4711.md", "incidents/e4712.md"}


def test_hit_carries_path_heading_text_snippet_score_and_ranks(indexed, searcher):
    hit = searcher.search("tomatoes ripen", k=1, enrich_query=False, fusion="rrf")[0]
    assert hit.path == "notes/garden.md"
    assert hit.heading == "# Garden"
    assert "Tomatoes" in hit.text and "Tomatoes" in hit.snippet
    assert hit.score == pytest.approx(1 / 61 + 1 / 61)
    assert hit.ranks == {"vector": 1, "keyword": 1}


def test_keyword_arm_answers_natural_language_questions(indexed, searcher):
    hits = searcher.search("how should I change autovacuum on my biggest tables?", k=2, mode="keyword")
    assert hits and hits[0].path == "notes/postgres.txt"


def test_keyword_only_hit_has_no_vector_rank(indexed, searcher):
    hits = searcher.search("E-4712", k=10, mode="keyword")
    assert all(h.ranks["vector"] is None for h in hits)


@pytest.mark.slow
def test_selective_filter_still_returns_k_hits(index, searcher, tmp_path):
    """Filters apply inside the arms, before ranking: 1% of the chunks, k hits."""
    notes = {
        f"general/n{i:03}.md": f"# Note {i}\n\nMeeting notes about the budget review number {i}." for i in range(297)
    }
    notes.update(
        {f"special/s{i}.md": f"# Special {i}\n\nSourdough bread recipe shared at budget review {i}." for i in range(3)}
    )
    index(write_notes(tmp_path / "many", notes))
    for mode in ("hybrid", "vector", "keyword"):
        # A keyword depth of 10 postings per term: the filter must act before that cut.
        hits = searcher.search(
            "budget review meeting", k=3, mode=mode, filters={"path_prefix": "special/"}, keyword_depth=10
        )
        assert sorted(h.path for h in hits) == ["special/s0.md", "special/s1.md", "special/s2.md"], mode


def test_filters_on_kind_metadata_root_and_time(index, searcher, tmp_path):
    root = write_notes(
        tmp_path / "notes",
        {
            "a.md": "---\nproject: apollo\n---\n# A\n\nLaunch checklist for the rocket.",
            "b.md": "---\nproject: zephyr\n---\n# B\n\nLaunch checklist for the balloon.",
            "c.txt": "Launch checklist for the boat.",
        },
    )
    index(root)
    assert [h.path for h in searcher.search("launch checklist", filters={"metadata": {"project": "zephyr"}})] == [
        "b.md"
    ]
    assert [h.path for h in searcher.search("launch checklist", filters={"kind": "text"})] == ["c.txt"]
    assert len(searcher.search("launch checklist", filters={"source_root": str(root)})) == 3
    assert searcher.search("launch checklist", filters={"source_root": "/elsewhere"}) == []
    future = (datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=1)).isoformat()
    assert searcher.search("launch checklist", filters={"modified_since": future}) == []
    assert len(searcher.search("launch checklist", filters={"modified_since": "2000-01-01"})) == 3
    absolute = searcher.search("launch checklist", filters={"path_prefix": str(root / "a")})
    assert [h.path for h in absolute] == ["a.md"]


def test_document_path_with_nul_is_refused(searcher):
    with pytest.raises(InvalidInput, match="the document path must not contain a NUL"):
        searcher.get_document("notes/\x00.md")


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("garbage", 'invalid connection string for the search database: missing "=" after "garbage"'),
        ("postgresql://localhost:notaport/x", "cannot connect to the search database: failed to resolve host"),
        ("host=/nonexistent/socket/dir dbname=pgrecall", "cannot connect to the search database: connection"),
        ("host=127.0.0.1 port=1 dbname=pgrecall", "cannot connect to the search database: connection"),
    ],
)
def test_a_bad_search_url_fails_at_once_with_its_cause(settings, url, message):
    # The cause, not the pool's "initialization incomplete" after its 30 s timeout.
    with pytest.raises(DatabaseUnavailable, match=message) as raised:
        Searcher(url, settings)
    assert "\n" not in str(raised.value)


def test_search_connections_are_read_only(indexed, searcher):
    with searcher.pool.connection() as conn, pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
        conn.execute("DELETE FROM pgrecall.chunks")


def test_filter_values_never_become_sql(indexed, searcher):
    hostile = "'; DROP TABLE pgrecall.chunks; --"
    assert searcher.search("export", filters={"path_prefix": hostile, "kind": "markdown"}) == []
    with pytest.raises(InvalidInput, match="unknown kind"):  # a kind is one of pgrecall.kinds.SEARCHABLE
        searcher.search("export", filters={"kind": hostile})
    assert searcher.search("export", k=1)  # the table is still there


IDENTIFIER_NOTES = {
    "code/retry.md": "# Retry\n\nThe helper export_ledger_batch retries with backoff; see RetryPolicyFactory.",
    "code/retry2.md": "# Retry\n\nThe helper export_ledger_rows retries with backoff; see RetryPolicyBuilder.",
    "ops/config.md": "# Config\n\nSettings live in config.yaml; the service reads /etc/pgrecall/env on start.",
    "ops/config2.md": "# Config\n\nSettings live in config.toml; the service reads /etc/pgrecall/envs on start.",
    "releases/a.md": "# Release\n\nVersion v2.3.1 fixed the template rename; decision DEC-0054 moved exports.",
    "releases/b.md": "# Release\n\nVersion v2.3.2 fixed the template rename; decision DEC-0055 moved exports.",
}


@pytest.mark.parametrize("fusion", ["rrf", "convex"])
@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("export_ledger_batch", "code/retry.md"),
        ("RetryPolicyFactory", "code/retry.md"),
        ("config.yaml", "ops/config.md"),
        ("/etc/pgrecall/env", "ops/config.md"),
        ("v2.3.1", "releases/a.md"),
        ("DEC-0054", "releases/a.md"),
        ("what did decision DEC-0055 change", "releases/b.md"),
    ],
)
def test_identifiers_rank_their_chunk_first_in_hybrid(index, searcher, tmp_path, query, expected, fusion):
    index(write_notes(tmp_path / "ids", IDENTIFIER_NOTES))
    assert searcher.search(query, k=3, fusion=fusion)[0].path == expected


def test_the_example_notes_error_code_ranks_its_incident_first_by_default(index, searcher, tmp_path):
    """examples/notes: E-4712's incident is the vector arm's first and the keyword arm's third,
    E-4711's the keyword arm's first (by far) and the vector arm's fourth. Reciprocal Rank Fusion,
    blind to how far the keyword arm's first leads, ranks E-4712 first (1/61 + 1/63 > 1/64 + 1/61);
    the convex combination of normalised scores ranks E-4711 first."""
    import shutil
    from pathlib import Path

    root = tmp_path / "examples"
    shutil.copytree(Path(__file__).resolve().parents[2] / "examples" / "notes", root)
    index(root)
    convex = searcher.search("E-4711", k=3, fusion="convex")
    assert convex[0].path == "incident-e4711.md"
    assert searcher.search("E-4711", k=3)[0].path == "incident-e4711.md"  # convex is the default
    assert convex[0].ranks["keyword"] == 1 and convex[0].arm_scores["keyword"] == 1.0


def test_convex_fusion_shows_each_arms_normalised_score(indexed, searcher):
    hit = searcher.search("tomatoes ripen", k=1, fusion="convex")[0]
    assert hit.path == "notes/garden.md"
    assert hit.ranks == {"vector": 1, "keyword": 1}
    assert hit.arm_scores == {"vector": 1.0, "keyword": 1.0}  # first in both arms: the top of each scale
    assert hit.score == pytest.approx(1.0)  # 0.5 * 1 + 0.5 * 1
    assert hit.to_json()["arm_scores"] == {"vector": 1.0, "keyword": 1.0}
    for other in searcher.search("tomatoes ripen", k=5, fusion="convex")[1:]:
        assert 0.0 <= other.score < 1.0
        assert all(v is None or 0.0 <= v <= 1.0 for v in other.arm_scores.values())
    rrf = searcher.search("tomatoes ripen", k=1, fusion="rrf")[0]
    assert rrf.arm_scores is None and rrf.to_json()["arm_scores"] is None


def test_the_default_fusion_is_the_setting(indexed, settings, db_url, embedder):
    import dataclasses

    for fusion in ("rrf", "convex"):
        configured = dataclasses.replace(settings, fusion=fusion)
        with Searcher(db_url, configured, embedder=embedder, pool_size=1) as searcher:
            hit = searcher.search("tomatoes ripen", k=1)[0]
            assert (hit.arm_scores is not None) == (fusion == "convex"), fusion
            override = searcher.search("tomatoes ripen", k=1, fusion="rrf")[0]
            assert override.arm_scores is None


def test_an_unknown_fusion_is_refused(searcher):
    with pytest.raises(InvalidInput, match="^unknown fusion 'max'; use one of rrf, convex$"):
        searcher.search("x", fusion="max")


def test_searcher_is_a_context_manager_that_closes_its_pool(indexed, settings, db_url, embedder):
    with Searcher(db_url, settings, embedder=embedder, pool_size=1) as searcher:
        assert searcher.search("E-4711", k=1, mode="keyword")[0].path == "incidents/e4711.md"
        assert not searcher.pool.closed
    assert searcher.pool.closed
    with pytest.raises(RuntimeError), Searcher(db_url, settings, embedder=embedder, pool_size=1) as failing:
        raise RuntimeError("a caller's error")
    assert failing.pool.closed  # closed on the way out of an error too


def test_every_search_is_validated_by_the_one_contract(searcher):
    """k is capped at MAX_K for the interfaces; the engine (evaluation) may rank deeper."""
    from pgrecall import contract

    message = f"^k must be an integer from 1 to {contract.MAX_K}$"
    with pytest.raises(InvalidInput, match=message):
        contract.search_request("x", k=contract.MAX_K + 1)
    with pytest.raises(InvalidInput, match=message):
        contract.search_request("x", k=True)
    assert searcher.search("x", k=contract.MAX_INTERNAL_K) == []  # evaluate.py ranks 300 for Recall@100
    with pytest.raises(InvalidInput, match=f"from 1 to {contract.MAX_INTERNAL_K}$"):
        searcher.search("x", k=contract.MAX_INTERNAL_K + 1)
    request = contract.search_request("  E-4711 ", k=3, mode="keyword", filters={"kind": "markdown", "root": None})
    assert request == contract.SearchRequest(
        query="E-4711", k=3, mode="keyword", enrich=False, filters={"kind": "markdown"}
    )


def test_a_metadata_filter_matches_a_front_matter_list_holding_the_value(index, searcher, tmp_path):
    """`tags: [incident]` is a list in the front matter; the filter tags=incident names one value."""
    index(write_notes(tmp_path / "tagged", TAGGED_NOTES))
    for mode in ("hybrid", "vector", "keyword"):
        hits = searcher.search("replica", k=10, mode=mode, filters={"metadata": {"tags": "incident"}})
        assert sorted(h.path for h in hits) == ["disk.md", "failover.md"], mode
    # Key by key: the list for tags, the scalar for status, in one filter.
    both = searcher.search("replica", k=10, filters={"metadata": {"tags": "incident", "status": "open"}})
    assert [h.path for h in both] == ["failover.md"]
    # Containment as before: a list in the filter must all be there; a part of a word is no match.
    listed = searcher.search("replica", k=10, filters={"metadata": {"tags": ["incident", "database"]}})
    assert [h.path for h in listed] == ["failover.md"]
    assert searcher.search("replica", k=10, filters={"metadata": {"tags": "inc"}}) == []
