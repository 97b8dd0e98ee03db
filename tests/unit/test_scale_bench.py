"""bench/scale_bench.py: resumable growth, copies that do not depend on how the index
was grown, and an HNSW index that comes back exactly as the migrations made it."""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import random
import sys
from pathlib import Path

import numpy as np
import psycopg
import pytest

from pgrecall.worker import store
from pgrecall.worker.document import Chunk, ParsedDocument

_spec = importlib.util.spec_from_file_location(
    "scale_bench", Path(__file__).resolve().parents[2] / "bench" / "scale_bench.py"
)
scale_bench = importlib.util.module_from_spec(_spec)
sys.modules["scale_bench"] = scale_bench
_spec.loader.exec_module(scale_bench)


def test_plan_resumes_where_the_last_run_stopped():
    counts = [3, 1, 2]  # chunks of the three source documents
    first = list(scale_bench.plan(0, counts, 5))
    assert first == [(1, 0), (1, 1), (1, 2)]  # 6 chunks: at least the 5 asked for
    rest = list(scale_bench.plan(len(first), counts, 4))
    assert rest == [(2, 0), (2, 1)]  # copy 2 begins after copy 1's last document
    assert list(scale_bench.plan(0, counts, 0)) == []
    assert list(scale_bench.plan(0, [], 10)) == []


def test_a_copy_is_the_same_however_the_index_was_grown():
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(2, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    source = scale_bench.Source(
        [("/notes", "a.md", "markdown", "A", "v1/128")],
        [[(0, "", "one two three four five six seven eight nine ten", 12), (1, "", "alpha beta gamma", 4)]],
        [vectors],
    )
    _, parsed, chunks, moved, _ = scale_bench.make_copy(source, 3, 0)
    _, parsed_again, chunks_again, moved_again, _ = scale_bench.make_copy(source, 3, 0)
    assert parsed.path == "copy3/a.md" == parsed_again.path
    assert [c.text for c in chunks] == [c.text for c in chunks_again]
    np.testing.assert_array_equal(moved, moved_again)
    np.testing.assert_allclose(np.linalg.norm(moved, axis=1), 1.0, rtol=1e-5)
    similarity = (moved * vectors).sum(axis=1)
    assert (similarity > 0.8).all() and (similarity < 0.999).all()  # near the original, not it
    _, _, _, other_copy, _ = scale_bench.make_copy(source, 4, 0)
    assert not np.array_equal(moved, other_copy)


def test_perturb_drops_and_swaps_words_but_keeps_a_word():
    text = " ".join(f"w{i}" for i in range(100))
    changed = scale_bench.perturb(text, random.Random(1))
    assert changed != text and 60 < len(changed.split()) < 100
    assert scale_bench.perturb("single", random.Random(1)) == "single"


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
