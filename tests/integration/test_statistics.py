"""BM25 statistics as base rows plus deltas (0013): writers do not wait on each other,
the fold changes no score, and the statistics always equal a recount."""

from __future__ import annotations

import asyncio

import psycopg
import pytest

from pgrecall import bm25
from pgrecall.worker import statistics, store
from tests.support.statistics import (
    COMMON,
    RECOUNTED_CORPUS_STATS,
    RECOUNTED_TERM_STATS,
    ROOT,
    SPACE,
    assert_statistics_consistent,
    connect,
    fold_statistics,
    note,
    rows,
    write,
)

QUERIES = ["replication lag", "vacuum settings checkpoints", "tomatoes garden", "E-4711 export", "zebra quagga"]
HANG_GUARD = 60.0  # seconds: a wait that never ends, not a slow machine
# Waits any inserter may meet, whatever the design of the statistics: extending a table by a
# page (four writers growing pgrecall.chunks at once) and a GIN index's pending-list page.
PHYSICAL_LOCKS = {"extend", "page"}


def keyword_results(url: str) -> dict[str, list[tuple[int, float]]]:
    from pgrecall.api.read_queries import ReadSession

    with psycopg.connect(url) as conn:
        session = ReadSession(conn, None, 40)
        return {query: session.keyword_arm(query, limit=20, depth=100) for query in QUERIES}


@pytest.fixture
def no_automatic_fold(monkeypatch):
    """Folds only where a test asks for one."""
    monkeypatch.setattr(statistics, "FOLD_EVERY", 10**9)


def test_a_writer_holding_its_transaction_open_does_not_block_another_sharing_its_words(db_url, no_automatic_fold):
    """The old design updated shared term_stats rows (and the corpus_stats row): B waited for A's commit."""

    async def scenario():
        a, b, folder = await connect(db_url), await connect(db_url), await connect(db_url)
        try:
            async with a.transaction():
                await write(a, "a.md", f"# A\n\n{COMMON} Alpha notes.")
                # A's transaction is open, holding whatever it wrote; B shares most of its words.
                # Were B (or the fold) to wait for A, it would wait for ever: A commits only after.
                await asyncio.wait_for(write(b, "b.md", f"# B\n\n{COMMON} Beta notes."), timeout=HANG_GUARD)
                # A fold meanwhile neither waits for A nor takes A's uncommitted deltas.
                folded = await asyncio.wait_for(statistics.fold(folder), timeout=HANG_GUARD)
                assert folded is not None and folded.term_deltas > 0 and folded.corpus_deltas == 1
        finally:
            for conn in (a, b, folder):
                await conn.close()

    asyncio.run(scenario())
    # A committed after the fold: its deltas wait for the next one, and count meanwhile.
    assert rows(db_url, "SELECT count(*) FROM pgrecall.corpus_stat_deltas") == [(1,)]
    assert_statistics_consistent(db_url)
    assert rows(db_url, "SELECT count(*) FROM pgrecall.documents WHERE chunk_count > 0") == [(2,)]


def test_concurrent_writers_and_folders_never_wait_on_a_lock_and_keep_statistics_exact(db_url):
    """Four writers rewriting and removing documents that share words, a folder looping beside them;
    a sampler of pg_locks sees no writer wait for another or for the fold (on a statistics row or
    delta, a row, a table or the fold's advisory lock), and the statistics equal a recount at the end."""
    waits: list[tuple] = []

    async def writer(number: int) -> None:
        conn = await connect(db_url)
        try:
            for round_ in range(3):
                for n in range(6):
                    extra = " ".join(f"w{number}x{n}r{round_}" for _ in range(1 + n % 3))
                    await write(conn, f"w{number}/{n}.md", f"# Note {n}\n\n{COMMON} {extra} shared{n % 2}.")
                await store.remove(conn, root=ROOT, path=f"w{number}/{round_}.md", exact=True)
        finally:
            await conn.close()

    async def folder(stop: asyncio.Event) -> None:
        conn = await connect(db_url)
        try:
            while not stop.is_set():
                await statistics.fold(conn)
                await asyncio.sleep(0.01)
        finally:
            await conn.close()

    async def sampler(stop: asyncio.Event) -> None:
        async with await psycopg.AsyncConnection.connect(db_url, autocommit=True) as conn:
            while not stop.is_set():
                cursor = await conn.execute(
                    "SELECT l.locktype, l.relation::regclass::text, l.mode, a.query FROM pg_locks l"
                    " JOIN pg_stat_activity a ON a.pid = l.pid WHERE NOT l.granted AND a.datname = current_database()"
                    " AND l.locktype <> ALL(%s)",
                    (list(PHYSICAL_LOCKS),),
                )
                waits.extend(await cursor.fetchall())
                await asyncio.sleep(0.005)

    async def scenario():
        # The space is added once before (as the first indexer of a new model does): writers that
        # add one new space at the same moment take turns on purpose (0023), which is not the subject.
        await (await connect(db_url)).close()
        stop = asyncio.Event()
        background = [asyncio.create_task(folder(stop)), asyncio.create_task(sampler(stop))]
        await asyncio.gather(*(writer(n) for n in range(4)))
        stop.set()
        await asyncio.gather(*background)

    asyncio.run(scenario())
    assert waits == []
    # Five notes each: a note removed in one round is written again in the next, but for the last round's.
    assert rows(db_url, "SELECT count(*) FROM pgrecall.documents WHERE chunk_count > 0") == [(20,)]
    assert_statistics_consistent(db_url)


def test_folding_changes_no_keyword_score_and_scores_equal_those_of_recounted_statistics(db_url, no_automatic_fold):
    """Scores read from base rows plus deltas, from folded base rows, and from statistics recounted
    from the postings are the same floats; a term whose last chunk went is pruned at the fold."""
    texts = {
        "ops/replication.md": f"# Replication\n\n{COMMON} Replication lag alarms fire at 30 seconds.",
        "ops/vacuum.md": "# Vacuum\n\nAutovacuum settings: lower the scale factor; vacuum freezes old rows.",
        "garden.md": "# Garden\n\nTomatoes ripen faster on the south bed of the garden.",
        "incident.md": "# Incident\n\nThe export job failed with error code E-4711 after throttled reads.",
        "zoo.md": "# Zoo\n\nA zebra and a quagga: the quagga is extinct.",
    }

    async def build():
        conn = await connect(db_url)
        try:
            for path, text in texts.items():
                await write(conn, path, text)
            await statistics.fold(conn)  # some statistics in the base rows, more in deltas below
            await write(conn, "ops/replication.md", texts["ops/replication.md"] + " Checkpoints spread writes.")
            await write(conn, "ops/more.md", f"# More\n\n{COMMON} Replication slots retain WAL.")
            await store.remove(conn, root=ROOT, path="zoo.md", exact=True)
        finally:
            await conn.close()

    asyncio.run(build())
    assert rows(db_url, "SELECT count(*) FROM pgrecall.term_stat_deltas WHERE term = 'quagga'") != [(0,)]
    unfolded = keyword_results(db_url)
    assert unfolded["replication lag"] and unfolded["vacuum settings checkpoints"]
    assert unfolded["zebra quagga"] == []

    fold_statistics(db_url)
    assert rows(db_url, "SELECT count(*) FROM pgrecall.term_stat_deltas") == [(0,)]
    assert rows(db_url, "SELECT count(*) FROM pgrecall.term_stats WHERE term IN ('zebra', 'quagga')") == [(0,)]
    assert keyword_results(db_url) == unfolded

    with psycopg.connect(db_url) as conn:
        conn.execute("DELETE FROM pgrecall.term_stats")
        conn.execute(f"INSERT INTO pgrecall.term_stats (language, term, df, document_df) {RECOUNTED_TERM_STATS}")
        conn.execute("DELETE FROM pgrecall.corpus_stats")
        conn.execute(
            "INSERT INTO pgrecall.corpus_stats (language, chunk_count, term_total, document_count)"
            f" {RECOUNTED_CORPUS_STATS}"
        )
    assert keyword_results(db_url) == unfolded


@pytest.mark.parametrize("pending", [0, 3])
def test_the_average_chunk_length_of_new_postings_counts_unfolded_deltas(db_url, pending, no_automatic_fold):
    """Posting impacts are computed with the corpus totals of base plus deltas, as a recount says."""

    async def build():
        conn = await connect(db_url)
        try:
            for n in range(4):
                await write(conn, f"{n}.md", f"# N{n}\n\n{COMMON} " + "padding " * (n * 7))
            await statistics.fold(conn)
            for n in range(pending):
                await write(conn, f"p{n}.md", f"# P{n}\n\n" + "lengthy words " * 20)
        finally:
            await conn.close()

    asyncio.run(build())
    # The probe is english: its impacts assume the average length of english chunks (0024).
    (chunks, terms, _) = [
        counts for language, *counts in rows(db_url, RECOUNTED_CORPUS_STATS) if language == "english"
    ][0]
    average = terms / chunks
    document, chunk_list, vectors = note("probe.md", "# Probe\n\nprobe probe probe words")

    async def probe():
        conn = await connect(db_url)
        try:
            await store.write_document(
                conn,
                root=ROOT,
                document=document,
                chunks=chunk_list,
                vectors=vectors,
                info=None,
                chunking="test",
                embedding_space=SPACE,
                language="english",
            )
        finally:
            await conn.close()

    asyncio.run(probe())
    (tf, length, impact), *_ = rows(
        db_url,
        "SELECT p.tf, c.term_count, p.impact FROM pgrecall.postings p JOIN pgrecall.chunks c ON c.id = p.chunk_id"
        " JOIN pgrecall.documents d ON d.id = c.document_id WHERE d.path = 'probe.md' AND p.term = 'probe'",
    )
    k1, b = bm25.K1, bm25.B
    assert impact == pytest.approx(tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / average)), rel=1e-6)


def test_a_writer_folds_every_fold_every_writes(db_url, monkeypatch):
    """Without the service's timer (`pgrecall index`), the write path folds as it goes."""
    monkeypatch.setattr(statistics, "FOLD_EVERY", 3)
    monkeypatch.setattr(statistics, "_unfolded", 0)

    async def build():
        conn = await connect(db_url)
        try:
            for n in range(5):
                await write(conn, f"{n}.md", f"# N{n}\n\n{COMMON} word{n}")
        finally:
            await conn.close()

    asyncio.run(build())
    # Folded after the third write; the fourth and fifth wait for the next fold.
    assert rows(db_url, "SELECT count(*) FROM pgrecall.corpus_stat_deltas") == [(2,)]
    assert rows(
        db_url, "SELECT chunk_count > 0, document_count FROM pgrecall.corpus_stats WHERE language = 'english'"
    ) == [(True, 3)]
    assert_statistics_consistent(db_url)


def test_an_index_run_folds_what_its_writers_left(settings, db_url, tmp_path, no_automatic_fold):
    """`pgrecall index` without a service: nobody's timer would fold the last writes' deltas,
    which every keyword search would sum until the next run."""
    from pgrecall.worker.run import run_index
    from tests.notes import write_notes

    root = write_notes(tmp_path / "notes", {f"n{i}.md": f"# Note {i}\n\n{COMMON} word{i}" for i in range(4)})
    summary = asyncio.run(run_index(settings, db_url, [str(root)]))
    assert summary.statuses == {"indexed": 4}
    assert rows(db_url, "SELECT count(*) FROM pgrecall.term_stat_deltas") == [(0,)]
    assert rows(db_url, "SELECT count(*) FROM pgrecall.corpus_stat_deltas") == [(0,)]
    assert rows(db_url, "SELECT sum(document_count) FROM pgrecall.corpus_stats") == [(4,)]
    assert_statistics_consistent(db_url)
