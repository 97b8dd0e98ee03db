"""Search latency, HNSW recall, write cost and disk use at 100,000 to 1,000,000 chunks.

    .venv/bin/python bench/scale_bench.py --chunks 100000 --json
    .venv/bin/python bench/scale_bench.py --chunks 1000000 --reuse --json    # grows what is there
    .venv/bin/python bench/scale_bench.py --sizes 100000,300000,1000000 --hnsw rebuild --json
                                                       # one database grown: the 1M build paid once

Starts from the SciFact index that `pgrecall eval ../shared/data/scifact` built
(database pgrecall_eval_scifact, about 23,000 chunks), clones it (CREATE
DATABASE ... TEMPLATE: the source is only read), migrates the clone, and adds
perturbed copies of its documents through the real write path
(store.write_document: COPY, postings, BM25 statistics, HNSW) until the index
holds about N chunks, in one of two --growth modes:
  copies  near-copies (the default): a copy drops 15% of the words at random and swaps
          a few neighbours, and its vectors are the original's plus Gaussian noise
          (sigma 0.02, renormalised), standing in for the embedding of a near-duplicate
          without paying a million model calls. At 1M chunks each abstract has about
          43 copies, so a query's exact top 10 are copies of one abstract: clusters
          that say more about the corpus than about the index.
  mix     no such clusters: each synthetic chunk mixes two different abstracts, its
          text the first half of one chunk's words and the second half of the other's,
          its vector the normalised interpolation of theirs (weight 0.35-0.65) plus the
          same noise. An abstract's mixes each lean towards another partner.
Document j of growth round i is the same text and vectors however the index was
grown (seeded by (j, i)), and growth resumes where the last run stopped, so
`--sizes` pays for the 1M build once. Each mode grows its own clone (--database
defaults to pgrecall_scale_bench, and pgrecall_scale_bench_mix for mix).

The load runs on --connections concurrent connections with
synchronous_commit off (the load is the fixture, not what is measured).
--hnsw says how the HNSW index is kept during the load:
  maintain  "maintained per write": every write_document inserts into the graph,
            as the worker does (the default);
  rebuild   "rebuilt after load": the HNSW indexes of pgrecall.chunks are dropped,
            the copies written (postings, statistics, COPY still through
            write_document), then each index is created again from its own
            definition as the migrations left it in the catalog (pg_indexes:
            same opclass, m and ef_construction), with --maintenance-work-mem
            and max_parallel_maintenance_workers. The definitions are kept in
            the table public.scale_bench_dropped_indexes of the clone until
            they are back, so an interrupted load is repaired by the next run.
The JSON says which ("build": {"hnsw": ...}).

Before measuring: the BM25 statistics are folded where the write path
defers them (a fold function of pgrecall.worker.store or .statistics, if
there is one), then VACUUM ANALYZE. Measured per size, with the real
Searcher (pgrecall.api.searcher.Searcher, the connections users get): keyword,
vector and hybrid searches (k=10, query embedding included, each query once
to warm the cache first), p50/p95 over the SciFact test queries; the HNSW
arm's recall@10 against exact search at the default ef_search; the parts
of a search timed apart ("parts": query embedding, each arm's SQL); the cost of
one document write on the built index (--writes sequential write_document
calls of a fresh copy each: p50/p95; they stay in the index); sizes on disk.
--ef-search 40,100,200 adds a sweep of recall and vector and hybrid latency.
--pool-size: the measuring Searcher's connections, 4 by default as the servers and the
Python API search (a hybrid search's two arms side by side); 1 as `pgrecall search`
runs them (in turn). The JSON says which ("arms").
--hnsw-with m=24,ef_construction=100 builds the HNSW indexes with those storage
parameters instead of the migrations' (with --hnsw rebuild, also on a clone that needs
no growth: --reuse then rebuilds the index alone); without it they are built as the
catalog defined them.

Prints one JSON object per size (--json: nothing else on stdout), and with
--sizes a growth table after them (on stderr with --json).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import inspect
import json
import random
import re
import statistics
import sys
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import psycopg
from psycopg import sql

SOURCE = "pgrecall_eval_scifact"
TARGET = "pgrecall_scale_bench"
SIGMA = 0.02
GROWTH_PREFIXES = {"copies": "copy", "mix": "mix"}  # a synthetic document's path: <prefix><round>/<path>
HNSW_MODES = {"maintain": "maintained per write", "rebuild": "rebuilt after load"}


def perturb(text: str, rng: random.Random) -> str:
    words = [w for w in text.split() if rng.random() > 0.15] or text.split()[:1]
    for _ in range(max(1, len(words) // 20)):
        i = rng.randrange(max(1, len(words) - 1))
        words[i : i + 2] = reversed(words[i : i + 2])
    return " ".join(words)


def noisy(vectors: np.ndarray, rng: np.random.Generator, sigma: float = SIGMA) -> np.ndarray:
    """Unit vectors near `vectors`: Gaussian noise added, renormalised."""
    moved = vectors + rng.normal(0, sigma, vectors.shape)
    return (moved / np.linalg.norm(moved, axis=1, keepdims=True)).astype(np.float32)


def plan(written_copies: int, chunk_counts: list[int], needed: int) -> Iterator[tuple[int, int]]:
    """(copy, source index) of the next copies to write, resuming after `written_copies`
    copy documents, until they add at least `needed` chunks (copies are numbered from 1)."""
    if not chunk_counts or needed <= 0:
        return
    planned, position = 0, written_copies
    while planned < needed:
        copy, index = copy_at(position, len(chunk_counts))
        yield copy, index
        planned += chunk_counts[index]
        position += 1


def copy_at(position: int, documents: int) -> tuple[int, int]:
    """(copy, source index) of the position-th copy document ever written (from 0)."""
    copy, index = divmod(position, documents)
    return copy + 1, index


def mixed_text(first: str, second: str) -> str:
    """The first half of `first`'s words and the second half of `second`'s."""
    head, tail = first.split(), second.split()
    return " ".join(head[: (len(head) + 1) // 2] + tail[len(tail) // 2 :])


def mixed_vectors(
    vectors: np.ndarray, partner: np.ndarray, rng: np.random.Generator, sigma: float = SIGMA
) -> np.ndarray:
    """Unit vectors between each of `vectors` and one of `partner`'s (row i with row i mod
    len(partner)): a weight in [0.35, 0.65] for each, Gaussian noise added, renormalised."""
    weights = rng.uniform(0.35, 0.65, (len(vectors), 1))
    paired = partner[np.arange(len(vectors)) % len(partner)]
    mixed = weights * vectors + (1 - weights) * paired
    return noisy(mixed / np.linalg.norm(mixed, axis=1, keepdims=True), rng, sigma)


def partner_of(copy: int, index: int, documents: int) -> int:
    """The other source document that document `index` of round `copy` is mixed with."""
    if documents < 2:
        return index
    return (index + 1 + random.Random(f"partner:{copy}:{index}").randrange(documents - 1)) % documents


@dataclasses.dataclass(frozen=True)
class Source:
    """The original documents (copies are made of these) and their chunks."""

    documents: list[tuple]  # (root, path, kind, title, chunking)
    chunks: list[list[tuple]]  # per document: (ordinal, heading, text, token_count)
    vectors: list[np.ndarray]  # per document: its chunks' vectors
    # per document: its language (text search configuration), which its copies are written in;
    # None: detected by write_document, from the copy's (empty) sections: simple
    languages: list[str] | None = None

    @property
    def chunk_counts(self) -> list[int]:
        return [len(c) for c in self.chunks]


def load_source(conn: psycopg.Connection) -> Source:
    from pgvector.psycopg import register_vector

    register_vector(conn)
    rows = conn.execute(
        """SELECT id, source_root, path, kind, title, chunking, language FROM pgrecall.documents
           WHERE chunk_count > 0 AND path !~ '^(copy|mix)[0-9]+/' ORDER BY id"""
    ).fetchall()
    position = {row[0]: i for i, row in enumerate(rows)}
    chunks: list[list[tuple]] = [[] for _ in rows]
    vectors: list[list[np.ndarray]] = [[] for _ in rows]
    for document_id, ordinal, heading, text, tokens, embedding in conn.execute(
        """SELECT c.document_id, c.ordinal, c.heading, c.text, c.token_count, c.embedding
           FROM pgrecall.chunks c JOIN pgrecall.documents d ON d.id = c.document_id
           WHERE d.path !~ '^(copy|mix)[0-9]+/' ORDER BY c.document_id, c.ordinal"""
    ):
        chunks[position[document_id]].append((ordinal, heading, text, tokens))
        vectors[position[document_id]].append(embedding.to_numpy())
    return Source([row[1:6] for row in rows], chunks, [np.stack(v) for v in vectors], [row[6] for row in rows])


def make_copy(source: Source, copy: int, index: int, growth: str = "copies"):
    """The document, chunks and vectors of round `copy`'s synthetic document made from source
    document `index`: a near-copy of it, or (growth "mix") it mixed with another one."""
    from pgrecall.worker.document import Chunk, ParsedDocument

    root, path, kind, title, chunking = source.documents[index]
    if growth == "mix":
        partner = partner_of(copy, index, len(source.documents))
        others = source.chunks[partner]
        chunks = [
            Chunk(o, h, mixed_text(t, others[o % len(others)][2]), (n + others[o % len(others)][3] + 1) // 2)
            for o, h, t, n in source.chunks[index]
        ]
        vectors = mixed_vectors(source.vectors[index], source.vectors[partner], np.random.default_rng([copy, index]))
    else:
        rng = random.Random(f"{copy}:{index}")
        chunks = [Chunk(o, h, perturb(t, rng), n) for o, h, t, n in source.chunks[index]]
        vectors = noisy(source.vectors[index], np.random.default_rng([copy, index]))
    prefix = GROWTH_PREFIXES[growth]
    parsed = ParsedDocument(
        path=f"{prefix}{copy}/{path}",
        kind=kind,
        title=title or "",
        content_hash=f"{prefix}{copy}",
        sections=[],
    )
    return root, parsed, chunks, vectors, chunking


def write_arguments(embedding_space: str | None) -> dict[str, Any]:
    """Keyword arguments write_document takes besides the document (embedding_space where it has one)."""
    from pgrecall.worker import store

    if "embedding_space" in inspect.signature(store.write_document).parameters:
        return {"embedding_space": embedding_space}
    return {}


async def write_copy(
    conn: psycopg.AsyncConnection, source: Source, copy: int, index: int, extra: dict, growth: str = "copies"
) -> int:
    from pgrecall.worker import store

    root, parsed, chunks, vectors, chunking = make_copy(source, copy, index, growth)
    if source.languages:  # a copy or a mix of two of the corpus's abstracts is in the corpus's language
        extra = {**extra, "language": source.languages[index]}
    await store.write_document(
        conn, root=root, document=parsed, chunks=chunks, vectors=vectors, info=None, chunking=chunking, **extra
    )
    return len(chunks)


async def _connect(url: str, fast_commit: bool) -> psycopg.AsyncConnection:
    from pgrecall.postgres.database import configure_connection_async

    conn = await psycopg.AsyncConnection.connect(url, autocommit=True)
    await configure_connection_async(conn)
    if fast_commit:
        await conn.execute("SET synchronous_commit = off")
    return conn


async def load(
    url: str, source: Source, jobs: list[tuple[int, int]], connections: int, extra: dict, growth: str = "copies"
) -> int:
    """Write the copies `jobs` on `connections` concurrent connections; returns the chunks written."""
    queue = iter(jobs)
    written = [0]
    step = max(1, len(jobs) // 20)

    async def worker() -> None:
        conn = await _connect(url, fast_commit=True)
        try:
            for number, (copy, index) in enumerate(queue):
                chunks = await write_copy(conn, source, copy, index, extra, growth)
                written[0] += chunks
                if number % step == 0:
                    print(f"  {written[0]} chunks written", file=sys.stderr)
        finally:
            await conn.close()

    await asyncio.gather(*(worker() for _ in range(connections)))
    return written[0]


async def timed_writes(
    url: str, source: Source, jobs: list[tuple[int, int]], extra: dict, growth: str = "copies"
) -> list[float]:
    """One write_document at a time on one connection, as the worker writes; ms each."""
    conn = await _connect(url, fast_commit=False)
    timings = []
    try:
        for copy, index in jobs:
            started = time.perf_counter()
            await write_copy(conn, source, copy, index, extra, growth)
            timings.append((time.perf_counter() - started) * 1000)
    finally:
        await conn.close()
    return timings


# --- the HNSW index, dropped for a load and rebuilt -------------------------------

KEEP_TABLE = "CREATE TABLE IF NOT EXISTS public.scale_bench_dropped_indexes (name text PRIMARY KEY, definition text)"


def hnsw_definitions(conn: psycopg.Connection) -> list[tuple[str, str]]:
    """(name, CREATE INDEX statement) of each HNSW index on pgrecall.chunks, as the catalog holds it."""
    return conn.execute(
        """SELECT indexname, indexdef FROM pg_indexes
           WHERE schemaname = 'pgrecall' AND tablename = 'chunks' AND indexdef ILIKE '% USING hnsw %'
           ORDER BY indexname"""
    ).fetchall()


def drop_hnsw(conn: psycopg.Connection) -> list[str]:
    """Drop the HNSW indexes, keeping their definitions in the clone until restore_hnsw."""
    with conn.transaction():
        conn.execute(KEEP_TABLE)
        found = hnsw_definitions(conn)
        for name, definition in found:
            conn.execute(
                "INSERT INTO public.scale_bench_dropped_indexes VALUES (%s, %s) ON CONFLICT DO NOTHING",
                (name, definition),
            )
            conn.execute(sql.SQL("DROP INDEX pgrecall.{}").format(sql.Identifier(name)))
    return [name for name, _ in found]


def storage_parameters(storage: str) -> dict[str, int]:
    """ "m=24,ef_construction=100" as {"m": 24, "ef_construction": 100}."""
    return {name.strip(): int(value) for name, value in (option.split("=") for option in storage.split(","))}


def with_storage(definition: str, storage: str | None) -> str:
    """A CREATE INDEX ... USING hnsw statement with its storage parameters replaced by `storage`
    ("m=24,ef_construction=100"); as it was without one."""
    if not storage:
        return definition
    options = ", ".join(f"{name}='{value}'" for name, value in storage_parameters(storage).items())
    without = re.sub(r" WITH \([^)]*\)", "", definition)
    body, where, predicate = without.partition(" WHERE ")
    return f"{body} WITH ({options}){where}{predicate}"


def hnsw_storage(conn: psycopg.Connection) -> list[str]:
    """The storage parameters (reloptions) of each HNSW index on pgrecall.chunks."""
    return [
        ",".join(sorted(options or []))
        for (options,) in conn.execute(
            """SELECT c.reloptions FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
               JOIN pg_am a ON a.oid = c.relam
               WHERE i.indrelid = 'pgrecall.chunks'::regclass AND a.amname = 'hnsw' ORDER BY c.relname"""
        )
    ]


def needs_rebuild(conn: psycopg.Connection, storage: str | None) -> bool:
    """Whether an HNSW index on pgrecall.chunks is built with other storage parameters than `storage`."""
    if not storage:
        return False
    wanted = ",".join(sorted(f"{name}={value}" for name, value in storage_parameters(storage).items()))
    return any(found != wanted for found in hnsw_storage(conn))


def restore_hnsw(
    conn: psycopg.Connection, maintenance_work_mem: str, workers: int, storage: str | None = None
) -> float:
    """Create again every index drop_hnsw dropped (with `storage` parameters where given, see
    with_storage); returns the seconds it took."""
    with conn.transaction():
        conn.execute(KEEP_TABLE)
    started = time.perf_counter()
    for name, definition in conn.execute("SELECT name, definition FROM public.scale_bench_dropped_indexes").fetchall():
        with conn.transaction():
            conn.execute("SELECT set_config('maintenance_work_mem', %s, true)", (maintenance_work_mem,))
            conn.execute("SELECT set_config('max_parallel_maintenance_workers', %s, true)", (str(workers),))
            conn.execute(with_storage(definition, storage))
            conn.execute("DELETE FROM public.scale_bench_dropped_indexes WHERE name = %s", (name,))
    return time.perf_counter() - started


# --- building ----------------------------------------------------------------------


def written_copies(conn: psycopg.Connection, growth: str = "copies") -> int:
    return conn.execute(
        "SELECT count(*) FROM pgrecall.documents WHERE path ~ %s", (f"^{GROWTH_PREFIXES[growth]}[0-9]+/",)
    ).fetchone()[0]


def chunk_total(conn: psycopg.Connection) -> int:
    return conn.execute("SELECT count(*) FROM pgrecall.chunks").fetchone()[0]


def fold_function():
    """(name, function) of the step that folds deferred BM25 statistics, where the write path has one."""
    import importlib

    for module_name in ("pgrecall.worker.statistics", "pgrecall.worker.store"):
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        for name in ("fold_statistics", "fold_term_deltas", "fold_deltas", "fold"):
            function = getattr(module, name, None)
            if callable(function):
                return f"{module_name}.{name}", function
    return None, None


def fold_statistics(url: str) -> str | None:
    """Fold deferred BM25 statistics (see fold_function); the function's name, or None."""
    name, function = fold_function()
    if function is None:
        return None
    if inspect.iscoroutinefunction(function):

        async def run() -> None:
            conn = await _connect(url, fast_commit=False)
            try:
                await function(conn)
            finally:
                await conn.close()

        asyncio.run(run())
    else:
        with psycopg.connect(url, autocommit=True) as conn:
            function(conn)
    return name


def grow(url: str, source: Source, target: int, args: argparse.Namespace, extra: dict) -> dict[str, Any]:
    """Add copies until the index holds about `target` chunks; what it took."""
    with psycopg.connect(url, autocommit=True) as conn:
        have, position = chunk_total(conn), written_copies(conn, args.growth)
    jobs = list(plan(position, source.chunk_counts, target - have))
    started = time.perf_counter()
    hnsw_seconds = 0.0
    with psycopg.connect(url, autocommit=True) as conn:
        if args.hnsw == "rebuild" and (jobs or needs_rebuild(conn, args.hnsw_with)):
            drop_hnsw(conn)
        elif args.hnsw == "maintain":  # an interrupted rebuild-mode load left the index out
            hnsw_seconds += restore_hnsw(conn, args.maintenance_work_mem, args.connections, args.hnsw_with)
    load_started = time.perf_counter()
    written = asyncio.run(load(url, source, jobs, args.connections, extra, args.growth)) if jobs else 0
    load_seconds = time.perf_counter() - load_started
    with psycopg.connect(url, autocommit=True) as conn:
        hnsw_seconds += restore_hnsw(conn, args.maintenance_work_mem, args.connections, args.hnsw_with)
        storage = hnsw_storage(conn)
    fold_started = time.perf_counter()
    folded = fold_statistics(url)
    fold_seconds = time.perf_counter() - fold_started
    vacuum_started = time.perf_counter()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")
    vacuum_seconds = time.perf_counter() - vacuum_started
    return {
        "hnsw": HNSW_MODES[args.hnsw],
        "growth": args.growth,
        "hnsw_storage": storage,
        "chunks_added": written,
        "documents_added": len(jobs),
        "connections": args.connections,
        "load_seconds": round(load_seconds, 1),
        "chunks_per_s": round(written / load_seconds, 1) if written else None,
        "hnsw_build_seconds": round(hnsw_seconds, 1),
        "statistics_fold": folded,
        "fold_seconds": round(fold_seconds, 1),
        "vacuum_analyze_seconds": round(vacuum_seconds, 1),
        "seconds": round(time.perf_counter() - started, 1),
    }


def prepare(admin: str, reuse: bool, target: str = TARGET) -> str:
    """The clone's URL: made from SOURCE unless `reuse` finds one; migrated either way."""
    from pgrecall.postgres.migrator import migrate

    with psycopg.connect(admin, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (target,)).fetchone()
        if not (reuse and exists):
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(target)))
            conn.execute(
                sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(sql.Identifier(target), sql.Identifier(SOURCE))
            )
    url = psycopg.conninfo.make_conninfo(admin, dbname=target)
    with psycopg.connect(url) as conn:
        migrate(conn)
        conn.commit()
    return url


def record_space(url: str, embedding_space: str | None) -> None:
    """Label the clone's vectors with the space of this run's query embedder. They stand in for
    it, as the perturbed copies' noisy vectors do: the bench measures latency and HNSW recall,
    not quality, and a second space would send every vector search down the mixed-space path
    (api.spaces: filtered by space) that only a re-embedding index takes."""
    if not embedding_space:
        return
    with psycopg.connect(url) as conn:
        recorded = conn.execute(
            """SELECT 1 FROM information_schema.columns
               WHERE table_schema = 'pgrecall' AND table_name = 'documents' AND column_name = 'embedding_space'"""
        ).fetchone()
        if recorded:
            conn.execute(
                "UPDATE pgrecall.documents SET embedding_space = %s "
                "WHERE chunk_count > 0 AND embedding_space IS DISTINCT FROM %s",
                (embedding_space, embedding_space),
            )


# --- measuring ---------------------------------------------------------------------


SIZES_SQL = """
SELECT pg_table_size('pgrecall.chunks'),
       pg_total_relation_size('pgrecall.chunks'),
       (SELECT coalesce(sum(pg_relation_size(format('%I.%I', schemaname, indexname))), 0)::bigint
        FROM pg_indexes WHERE schemaname = 'pgrecall' AND tablename = 'chunks' AND indexdef ILIKE '% USING hnsw %'),
       pg_total_relation_size('pgrecall.documents'),
       pg_table_size('pgrecall.postings'),
       pg_indexes_size('pgrecall.postings'),
       pg_total_relation_size('pgrecall.term_stats'),
       pg_database_size(current_database())
"""
SIZE_NAMES = (
    "chunks_table",
    "chunks_total",
    "hnsw_index",
    "documents_total",
    "postings_table",
    "postings_indexes",
    "term_stats_total",
    "database",
)


def disk_bytes(url: str) -> dict[str, int]:
    with psycopg.connect(url) as conn:
        return dict(zip(SIZE_NAMES, conn.execute(SIZES_SQL).fetchone(), strict=True))


def disk_sizes(url: str) -> dict[str, float]:
    return {f"{name}_mb": round(value / 2**20, 1) for name, value in disk_bytes(url).items()}


def percentiles(values: list[float]) -> dict[str, float]:
    from pgrecall.composition.evaluation import percentile

    return {"p50_ms": round(statistics.median(values), 1), "p95_ms": round(percentile(values, 95), 1)}


def search_latencies(searcher, queries: list[str]) -> dict[str, dict[str, float]]:
    modes = {"keyword": {"mode": "keyword"}, "vector": {"mode": "vector"}, "hybrid": {"mode": "hybrid"}}
    for query in queries:  # every page the timed pass reads, read once
        searcher.search(query, k=10, mode="hybrid", enrich_query=False)
    latencies: dict[str, list[float]] = {label: [] for label in modes}
    for query in queries:
        for label, kwargs in modes.items():
            started = time.perf_counter()
            searcher.search(query, k=10, enrich_query=False, **kwargs)
            latencies[label].append((time.perf_counter() - started) * 1000)
    return {label: percentiles(values) for label, values in latencies.items()}


def part_latencies(searcher, queries: list[str]) -> dict[str, dict[str, float]]:
    """What a search is made of, timed apart: the query embedding and each arm's SQL alone
    (as Searcher.run calls them at k=10: 100 candidates an arm, keyword depth 1000)."""
    from pgrecall.api import read_queries as store

    embedding_ms, vectors = [], []
    for query in queries:
        started = time.perf_counter()
        vectors.append(searcher.embedder.embed_queries([query])[0])
        embedding_ms.append((time.perf_counter() - started) * 1000)
    keyword_ms, vector_ms = [], []
    with searcher.pool.connection() as conn, conn.transaction():
        session = store.ReadSession(
            conn, None, ef_search=searcher.settings.ef_search and max(searcher.settings.ef_search, 100)
        )
        space = session.query_space(searcher.embedder.space)
        for query, vector in zip(queries, vectors, strict=True):
            started = time.perf_counter()
            session.keyword_arm(query, 100, 1000)
            keyword_ms.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            session.vector_arm(vector, 100, space=space)
            vector_ms.append((time.perf_counter() - started) * 1000)
    return {
        "query_embedding": percentiles(embedding_ms),
        "keyword_arm_sql": percentiles(keyword_ms),
        "vector_arm_sql": percentiles(vector_ms),
    }


def measure(url: str, searcher, source: Source, queries: list[str], args: argparse.Namespace, extra: dict):
    from pgrecall.api.searcher import Searcher
    from pgrecall.composition.evaluation import ann_recall, exact_neighbours

    result: dict[str, Any] = search_latencies(searcher, queries)
    result["parts"] = part_latencies(searcher, queries)
    exact = exact_neighbours(searcher, queries)  # once: the sweep's settings share the index
    result["hnsw_recall@10"] = ann_recall(searcher, queries, exact=exact)
    result["ef_search"] = searcher.settings.ef_search
    if args.ef_search:
        sweep = {}
        for ef_search in [int(value) for value in args.ef_search.split(",") if value]:
            swept_settings = dataclasses.replace(searcher.settings, ef_search=ef_search)
            with Searcher(url, swept_settings, embedder=searcher.embedder, pool_size=args.pool_size) as swept:
                timed: dict[str, list[float]] = {"vector": [], "hybrid": []}
                for query in queries:
                    for mode, values in timed.items():
                        started = time.perf_counter()
                        swept.search(query, k=10, mode=mode)
                        values.append((time.perf_counter() - started) * 1000)
                sweep[ef_search] = {
                    "hnsw_recall@10": ann_recall(swept, queries, exact=exact),
                    **percentiles(timed["vector"]),
                    "hybrid": percentiles(timed["hybrid"]),
                }
        result["ef_search_sweep"] = sweep
    result.update(disk_sizes(url))
    if args.writes:
        with psycopg.connect(url) as conn:
            position = written_copies(conn, args.growth)
        jobs = [copy_at(position + n, len(source.documents)) for n in range(args.writes)]
        timings = asyncio.run(timed_writes(url, source, jobs, extra, args.growth))
        result["write_p50_ms"] = round(statistics.median(timings), 1)
        result["write_p95_ms"] = percentiles(timings)["p95_ms"]
        result["writes"] = len(timings)
        result["write_chunks_per_document"] = round(
            statistics.fmean(source.chunk_counts[index] for _, index in jobs), 2
        )
    return result


def growth_table(rows: list[dict[str, Any]]) -> str:
    columns = (
        ("chunks", lambda r: r["chunks"]),
        ("kw p50", lambda r: r["keyword"]["p50_ms"]),
        ("kw p95", lambda r: r["keyword"]["p95_ms"]),
        ("vec p50", lambda r: r["vector"]["p50_ms"]),
        ("vec p95", lambda r: r["vector"]["p95_ms"]),
        ("hyb p50", lambda r: r["hybrid"]["p50_ms"]),
        ("hyb p95", lambda r: r["hybrid"]["p95_ms"]),
        ("recall", lambda r: r["hnsw_recall@10"]),
        ("write p50", lambda r: r.get("write_p50_ms", "-")),
        ("build s", lambda r: r["build_seconds"]),
        ("db MB", lambda r: r["database_mb"]),
        ("hnsw MB", lambda r: r["hnsw_index_mb"]),
    )
    lines = ["".join(f"{name:>11}" for name, _ in columns)]
    lines += ["".join(f"{value(row)!s:>11}" for _, value in columns) for row in rows]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--chunks", type=int, default=100_000, help="about how many chunks to measure at")
    size.add_argument("--sizes", help="comma-separated sizes: one database grown to each in turn, measured at each")
    parser.add_argument("--json", action="store_true", help="only the JSON objects on stdout")
    parser.add_argument("--reuse", action="store_true", help="grow the existing scaled database instead of a new clone")
    parser.add_argument("--hnsw", choices=sorted(HNSW_MODES), default="maintain", help="HNSW during the load")
    parser.add_argument("--connections", type=int, default=2, help="concurrent writers during the load")
    parser.add_argument("--maintenance-work-mem", default="4GB", help="for the HNSW rebuild (--hnsw rebuild)")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument(
        "--pool-size",
        type=int,
        default=4,
        help="the Searcher's connections: 4 as the servers and the Python API search (a hybrid's arms side by"
        " side), 1 as `pgrecall search` (in turn)",
    )
    parser.add_argument("--writes", type=int, default=50, help="single document writes timed on the built index")
    parser.add_argument("--dataset", default="../shared/data/scifact")
    parser.add_argument("--growth", choices=sorted(GROWTH_PREFIXES), default="copies", help="how the index grows")
    parser.add_argument("--database", help=f"the scaled clone of {SOURCE} ({TARGET}, {TARGET}_mix for --growth mix)")
    parser.add_argument("--hnsw-with", help="HNSW storage parameters to build with, e.g. m=24,ef_construction=100")
    parser.add_argument("--ef-search", default="", help="ef_search values to sweep, e.g. 40,100,200,400")
    args = parser.parse_args()

    from pgrecall.api.searcher import Searcher
    from pgrecall.logs import configure_logging
    from pgrecall.postgres import database
    from pgrecall.settings import load_settings

    configure_logging()
    settings = load_settings()
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else [args.chunks]
    args.database = args.database or (TARGET if args.growth == "copies" else f"{TARGET}_{args.growth}")
    url = prepare(database.database_url(settings), args.reuse, args.database)
    with psycopg.connect(url) as conn:
        source = load_source(conn)
    with open(f"{args.dataset}/queries.jsonl", encoding="utf-8") as lines:
        queries = [json.loads(line)["text"] for line in lines][: args.queries]

    rows, built = [], 0.0
    with Searcher(url, settings, pool_size=args.pool_size) as searcher:
        space = getattr(searcher.embedder, "space", None)
        record_space(url, space)
        extra = write_arguments(space)
        for target in sizes:
            print(f"growing to {target} chunks", file=sys.stderr)
            build = grow(url, source, target, args, extra)
            print(f"built: {json.dumps(build)}", file=sys.stderr)
            with psycopg.connect(url) as conn:
                chunks, documents = conn.execute(
                    "SELECT (SELECT count(*) FROM pgrecall.chunks), (SELECT count(*) FROM pgrecall.documents)"
                ).fetchone()
            built += build["seconds"]
            row = {"chunks": chunks, "documents": documents, "queries": len(queries), "hnsw": build["hnsw"]}
            row["arms"] = "side by side" if args.pool_size >= 2 else "in turn"
            row["growth"], row["hnsw_storage"] = args.growth, build["hnsw_storage"]
            row["build_seconds"] = build["seconds"]
            row["build_seconds_this_run"] = round(built, 1)
            row.update(measure(url, searcher, source, queries, args, extra))
            row["build"] = build
            rows.append(row)
            print(json.dumps(row), flush=True)
    if len(rows) > 1:
        print(growth_table(rows), file=sys.stderr if args.json else sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
