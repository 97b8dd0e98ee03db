"""bench/scale_bench.py on a real index: growth with copies, and an HNSW index that comes back
exactly as the migrations made it, even after an interrupted rebuild."""

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
                **scale_bench.write_arguments(embedding_space),
            )


@pytest.mark.parametrize("mode", ["rebuild", "maintain"])
def test_grow_adds_copies_and_leaves_the_hnsw_index_as_the_migrations_made_it(db_url, mode):
    asyncio.run(_write_originals(db_url, "test-space"))
    with psycopg.connect(db_url) as conn:
        definitions = scale_bench.hnsw_definitions(conn)
        source = scale_bench.load_source(conn)
    assert definitions and len(source.documents) == 3
    args = argparse.Namespace(hnsw=mode, connections=2, maintenance_work_mem="64MB")
    extra = scale_bench.write_arguments("test-space")

    build = scale_bench.grow(db_url, source, 10, args, extra)  # 6 chunks there: 2 copies of 2 chunks
    assert build["hnsw"] == scale_bench.HNSW_MODES[mode]
    assert (build["chunks_added"], build["documents_added"]) == (4, 2)
    scale_bench.grow(db_url, source, 14, args, extra)  # resumes: the third document's copy, then copy 2
    with psycopg.connect(db_url) as conn:
        paths = [row[0] for row in conn.execute("SELECT path FROM pgrecall.documents ORDER BY path")]
        assert paths == ["0.md", "1.md", "2.md", "copy1/0.md", "copy1/1.md", "copy1/2.md", "copy2/0.md"]
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
