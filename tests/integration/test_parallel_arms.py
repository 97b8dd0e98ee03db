"""A hybrid search's keyword arm on a connection of its own, beside the vector arm.

A searcher of 2 or more connections runs the arms at once; one of a single connection runs them in
turn. Both must rank the same, and concurrent searches must never wait on each other for good.
"""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from pgrecall.api.searcher import Searcher

SCIFACT = Path("/work/shared/data/scifact")
ABSTRACTS = 150
QUERIES = 40


@pytest.fixture
def scifact_notes(index, tmp_path) -> list[str]:
    """The first ABSTRACTS SciFact abstracts indexed through the real pipeline; the queries of the
    test split."""
    if not (SCIFACT / "corpus.jsonl").exists():
        pytest.skip(f"SciFact is not at {SCIFACT}")
    root = tmp_path / "scifact"
    root.mkdir()
    with (SCIFACT / "corpus.jsonl").open() as corpus:
        for _, line in zip(range(ABSTRACTS), corpus, strict=False):
            abstract = json.loads(line)
            (root / f"{abstract['_id']}.md").write_text(f"# {abstract['title']}\n\n{abstract['text']}\n")
    index(root)
    lines = (SCIFACT / "queries.jsonl").read_text().splitlines()
    return [json.loads(line)["text"] for line in lines[:QUERIES]]


def _ranking(searcher: Searcher, query: str, **search) -> list[tuple]:
    return [(hit.chunk_id, hit.score, tuple(sorted(hit.ranks.items()))) for hit in searcher.search(query, **search)]


SEARCHES = [
    {"fusion": "convex"},
    {"fusion": "rrf"},
    {"enrich_query": True},
    {"filters": {"kind": "markdown"}},
    {"k": 30},
]


def test_arms_side_by_side_rank_as_arms_in_turn(scifact_notes, settings, db_url, embedder):
    with (
        Searcher(db_url, settings, embedder=embedder, pool_size=1) as in_turn,
        Searcher(db_url, settings, embedder=embedder, pool_size=2) as side_by_side,
    ):
        assert in_turn.keyword_pool is None and side_by_side.keyword_pool is not None
        before = side_by_side.keyword_pool.get_stats().get("requests_num", 0)
        compared = 0
        for query in scifact_notes:
            for search in SEARCHES:
                expected = _ranking(in_turn, query, **search)
                assert _ranking(side_by_side, query, **search) == expected, (query, search)
                compared += bool(expected)
        # Every hybrid search took its keyword arm's connection from the second pool.
        assert side_by_side.keyword_pool.get_stats().get("requests_num", 0) - before == len(scifact_notes) * len(
            SEARCHES
        )
        assert compared > len(scifact_notes) * len(SEARCHES) * 0.9
        # Keyword and vector modes have one arm: nothing runs beside them.
        for mode in ("keyword", "vector"):
            assert _ranking(side_by_side, scifact_notes[0], mode=mode) == _ranking(in_turn, scifact_notes[0], mode=mode)
        assert side_by_side.keyword_pool.get_stats().get("requests_num", 0) - before == len(scifact_notes) * len(
            SEARCHES
        )


def test_keyword_arm_connections_are_read_only(scifact_notes, settings, db_url, embedder):
    with (
        Searcher(db_url, settings, embedder=embedder, pool_size=2) as searcher,
        searcher.keyword_pool.connection() as conn,
    ):
        assert conn.read_only
        assert conn.execute("SHOW transaction_read_only").fetchone()[0] == "on"


def test_more_concurrent_searches_than_connections_all_finish_with_the_same_rankings(
    scifact_notes, settings, db_url, embedder
):
    # 16 searches at once on 2 + 2 connections: each holds a connection of the first pool while its
    # keyword arm needs one of the second. Were both arms drawn from one pool, the searches holding
    # every connection would wait for ever on arms that cannot get one (the pool's 30 s timeout).
    queries = scifact_notes[:16]
    with Searcher(db_url, settings, embedder=embedder, pool_size=1) as in_turn:
        expected = {query: _ranking(in_turn, query) for query in queries}
    with Searcher(db_url, settings, embedder=embedder, pool_size=2) as searcher:
        start = threading.Barrier(len(queries))

        def one(query: str) -> list[tuple]:
            start.wait()
            return _ranking(searcher, query)

        with ThreadPoolExecutor(len(queries)) as clients:
            found = dict(zip(queries, clients.map(one, queries), strict=True))
        # The same hits in the same order with the same ranks; scores to their last bits, which the
        # keyword arm's BM25 sums can take in another order on another connection (seen as much
        # with searches at once on a searcher of one connection: not the arms side by side).
        for query in queries:
            assert [(c, r) for c, _, r in found[query]] == [(c, r) for c, _, r in expected[query]], query
            assert [s for _, s, _ in found[query]] == pytest.approx([s for _, s, _ in expected[query]], rel=1e-9)
        for pool in (searcher.pool, searcher.keyword_pool):
            stats = pool.get_stats()
            assert stats.get("requests_errors", 0) == 0 and stats.get("requests_waiting", 0) == 0
            assert stats["pool_available"] == stats["pool_size"]  # every connection back
