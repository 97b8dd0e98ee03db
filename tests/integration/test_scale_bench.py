"""bench/scale_bench.py on a real index: growth with copies or mixes, and an HNSW index that comes
back exactly as the migrations made it (or with the storage parameters asked for), even after an
interrupted rebuild."""

from __future__ import annotations

import argparse
import asyncio

import numpy as np
import psycopg
import pytest

from pgrecall.worker import store
from pgrecall.worker.document import Chunk, ParsedDocument
from tests.support.bench import scale_bench


async def _write_originals(url: str, embedding_space: str | None) -> None:
    rng = np.random.default_rng(1)
    conn = await scale_bench._connect(url, fast_commit=False)
    async with conn:
        for n in range(3):
            vectors = rng.normal(size=(2, 384)).astype(np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            chunks = [Chunk(0, "", f"note {n} about rotating keys", 6), Chunk(1, "", f"second part {n}", 4)]
            document = ParsedDocument(path=f"{n}.md", kind="markdown", title=f"{n}", content_hash=f"{n}", sections=[])
            await store.write_document(
                conn,
                root="/notes",
                document=document,
                chunks=chunks,
                vectors=vectors,
                info=None,
                chunking="v1/128",
                language="german" if n == 1 else "english",
                **scale_bench.write_arguments(embedding_space),
            )


@pytest.mark.parametrize("mode", ["rebuild", "maintain"])
def test_grow_adds_copies_and_leaves_the_hnsw_index_as_the_migrations_made_it(db_url, mode):
    asyncio.run(_write_originals(db_url, "test-space"))
    with psycopg.connect(db_url) as conn:
        definitions = scale_bench.hnsw_definitions(conn)
        source = scale_bench.load_source(conn)
    assert definitions and len(source.documents) == 3
    args = argparse.Namespace(hnsw=mode, connections=2, maintenance_work_mem="64MB", growth="copies", hnsw_with=None)
    extra = scale_bench.write_arguments("test-space")

    build = scale_bench.grow(db_url, source, 10, args, extra)  # 6 chunks there: 2 copies of 2 chunks
    assert build["hnsw"] == scale_bench.HNSW_MODES[mode]
    assert (build["chunks_added"], build["documents_added"]) == (4, 2)
    scale_bench.grow(db_url, source, 14, args, extra)  # resumes: the third document's copy, then copy 2
    with psycopg.connect(db_url) as conn:
        paths = [row[0] for row in conn.execute("SELECT path FROM pgrecall.documents ORDER BY path")]
        assert paths == ["0.md", "1.md", "2.md", "copy1/0.md", "copy1/1.md", "copy1/2.md", "copy2/0.md"]
        # Each copy is written in its source's language (not detected from its empty sections: simple).
        languages = dict(conn.execute("SELECT path, language FROM pgrecall.documents"))
        assert {path: languages[path] for path in ("copy1/0.md", "copy1/1.md", "copy2/0.md")} == {
            "copy1/0.md": "english",
            "copy1/1.md": "german",
            "copy2/0.md": "english",
        }
        assert conn.execute(
            "SELECT count(*) FROM pgrecall.postings p JOIN pgrecall.documents d ON d.id = p.document_id"
            " WHERE d.path = 'copy1/1.md' AND p.language <> 'german'"
        ).fetchone() == (0,)
        assert scale_bench.chunk_total(conn) == 14
        assert scale_bench.hnsw_definitions(conn) == definitions  # same name, opclass, m, ef_construction
        assert conn.execute("SELECT count(*) FROM public.scale_bench_dropped_indexes").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM pgrecall.term_stat_deltas").fetchone()[0] == 0  # folded
    sizes = scale_bench.disk_bytes(db_url)
    assert sizes["hnsw_index"] > 0 and sizes["database"] > sizes["chunks_total"] > sizes["chunks_table"] > 0


def test_an_interrupted_rebuild_is_repaired_by_the_next_run(db_url):
    with psycopg.connect(db_url, autocommit=True) as conn:
        definitions = scale_bench.hnsw_definitions(conn)
        assert scale_bench.drop_hnsw(conn) == [name for name, _ in definitions]
        assert scale_bench.hnsw_definitions(conn) == []  # the process dies here, mid-load
        scale_bench.restore_hnsw(conn, "64MB", 1)
        assert scale_bench.hnsw_definitions(conn) == definitions
        assert conn.execute("SELECT count(*) FROM public.scale_bench_dropped_indexes").fetchone()[0] == 0


def test_mix_growth_and_a_rebuild_with_other_storage_parameters(db_url):
    asyncio.run(_write_originals(db_url, "test-space"))
    with psycopg.connect(db_url) as conn:
        definitions = scale_bench.hnsw_definitions(conn)
        source = scale_bench.load_source(conn)
    args = argparse.Namespace(
        hnsw="rebuild", connections=2, maintenance_work_mem="64MB", growth="mix", hnsw_with="m=8,ef_construction=32"
    )
    build = scale_bench.grow(db_url, source, 10, args, scale_bench.write_arguments("test-space"))
    assert (build["growth"], build["chunks_added"]) == ("mix", 4)
    assert build["hnsw_storage"] == ["ef_construction=32,m=8"]
    with psycopg.connect(db_url) as conn:
        assert [
            row[0] for row in conn.execute("SELECT path FROM pgrecall.documents WHERE path ~ '^mix' ORDER BY path")
        ] == [
            "mix1/0.md",
            "mix1/1.md",
        ]
        assert scale_bench.written_copies(conn, "mix") == 2 and scale_bench.written_copies(conn, "copies") == 0
        assert len(scale_bench.load_source(conn).documents) == 3  # the mixes are no source
        [(name, definition)] = scale_bench.hnsw_definitions(conn)
        assert name == definitions[0][0] and "WITH (m='8', ef_construction='32')" in definition
        # Nothing to grow, same parameters: the index is kept as it is.
        assert not scale_bench.needs_rebuild(conn, "m=8,ef_construction=32")
        assert scale_bench.needs_rebuild(conn, "m=16")
    args.hnsw_with = None
    again = scale_bench.grow(db_url, source, 10, args, scale_bench.write_arguments("test-space"))
    assert again["chunks_added"] == 0 and again["hnsw_storage"] == ["ef_construction=32,m=8"]


def test_write_cost_times_each_statement_and_counts_the_buffers_it_touched(db_url):
    from tests.support.bench import write_cost

    asyncio.run(_write_originals(db_url, "test-space"))
    with psycopg.connect(db_url, autocommit=True) as conn:
        source = scale_bench.load_source(conn)
        before = write_cost.buffers(conn)
        wal_before = write_cost.wal_and_checkpoints(conn)
    write_cost.TimedCursor.names = write_cost.statement_names()
    jobs = [scale_bench.copy_at(n, len(source.documents)) for n in range(4)]
    arguments = scale_bench.write_arguments("test-space")
    timings, spent = asyncio.run(write_cost.write_pass(db_url, scale_bench, source, jobs[:2], arguments, "mix"))
    assert len(timings) == 2 and all(ms > 0 for ms in timings)
    # As the worker writes, the chunks' and postings' inserts go in a pipeline: sent, not waited
    # for, so they are not timed as if their time were known.
    assert not {"insert_chunks", "insert_postings", "upsert_document"} & set(spent)
    timings, spent = asyncio.run(
        write_cost.write_pass(db_url, scale_bench, source, jobs[2:], arguments, "mix", statements_apart=True)
    )
    assert len(timings) == 2
    assert {"insert_chunks", "insert_postings", "upsert_document", "record_document_statistics"} <= set(spent)
    with psycopg.connect(db_url, autocommit=True) as conn:
        assert scale_bench.written_copies(conn, "mix") == 4
        after = write_cost.buffers(conn)
        wal_after = write_cost.wal_and_checkpoints(conn)
    hnsw = [name for name in after if name.startswith("chunks_embedding_space_")]
    assert hnsw and sum(after[hnsw[0]]) > sum(before.get(hnsw[0], (0, 0)))  # the graph was read and written
    assert wal_after[0] > wal_before[0]


def test_write_cost_warms_the_os_cache_with_every_file_of_the_database(db_url):
    from tests.support.bench import write_cost

    with psycopg.connect(db_url, autocommit=True) as conn:
        if conn.execute("SELECT inet_server_addr() IS NOT NULL").fetchone()[0]:
            pytest.skip("the server is reached over TCP: its files may be on another machine")
        paths = write_cost.database_files(conn)
        (size,) = conn.execute("SELECT pg_database_size(current_database())").fetchone()
    relation = next(path for path in paths if path.name.isdigit())
    assert all(path.is_file() for path in paths)
    read = write_cost.warm_os_cache(paths)
    # All of the database's own files: the size the server reports, but for what changes meanwhile.
    assert 0.9 * size <= read <= 1.1 * size and relation.stat().st_size <= read
