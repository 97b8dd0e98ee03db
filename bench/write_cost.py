"""What one document write costs on a large index, and where that time goes.

    .venv/bin/python bench/write_cost.py [--database pgrecall_scale_bench_mix] [--writes 100]
        [--passes 2] [--growth mix] [--warm-os-cache] [--statements-apart] [--json]

Runs on a clone that `bench/scale_bench.py` grew (it is written to: the writes stay in it),
after its own build and VACUUM ANALYZE. Each pass writes --writes fresh synthetic documents
(the next ones scale_bench would write, on one connection, as the worker writes: the commit
does not wait for the WAL flush, index.sql's commit_without_flush) through the real
`store.write_document`, and reports:
  - the write's p50/p95 (ms) and each pass's own, so passes can be compared;
  - each statement's share: the time of every statement of write_document, by its name
    in sql/queries/index.sql (client side, on a local socket), summed over the pass. A write
    sends most of its statements in psycopg pipelines, where a statement's own time cannot be
    told apart (they run on the server while the client sends the next ones and are waited
    for together), so these are timed only with --statements-apart, which writes without
    the pipelines: each statement then waits for its result, and the write's time includes
    the round trips the pipelines save (TimedCursor);
  - buffers per write, by relation (pg_statio_all_tables / _indexes before and after the
    pass: shared-buffer hits and reads, a read being a page not in shared_buffers, from the
    OS cache or the disk), for the HNSW index, the postings and the statistics;
  - WAL bytes and full-page images per write (pg_stat_wal), the checkpoints begun during
    the pass (after one, the first change to each page logs the whole page), and the
    server's shared_buffers.

A page not in shared_buffers comes from the OS cache in microseconds or from the disk in far more,
and PostgreSQL cannot tell which: a pass right after a boot and one after the database was read
differ several times over. --warm-os-cache reads the database's files once before the passes (the
server must be on this machine and its data directory readable), so that runs agree; without it
the figures are those of whatever the OS happens to cache.

--compare-commit: the passes take turns (ABBA) between the commit as the worker makes it and
one that waits for the WAL flush (synchronous_commit on, as writes committed before), and the
JSON ends with each kind's p50/p95 over its passes and their ratio: measured in one run.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import psycopg

from pgrecall.composition.evaluation import percentile

STATIO_SQL = """
SELECT relname, heap_blks_hit + coalesce(toast_blks_hit, 0), heap_blks_read + coalesce(toast_blks_read, 0)
FROM pg_statio_all_tables WHERE schemaname IN ('pgrecall', 'pg_temp') OR schemaname LIKE 'pg_temp%'
UNION ALL
SELECT indexrelname, idx_blks_hit, idx_blks_read FROM pg_statio_all_indexes WHERE schemaname = 'pgrecall'
"""


def statement_names() -> dict[str, str]:
    from pgrecall.postgres import queries

    return {text: name for name, text in queries.load("index.sql").items()}


class TimedCursor(psycopg.AsyncCursor):
    """An AsyncCursor that records each statement's seconds by its name (see statement_names).
    A statement sent in a pipeline returns before the server has run it: it is not timed."""

    names: dict[str, str] = {}
    spent: collections.Counter = collections.Counter()

    async def execute(self, query, params=None, **kwargs):
        if self.connection.pgconn.pipeline_status != psycopg.pq.PipelineStatus.OFF:
            return await super().execute(query, params, **kwargs)
        started = time.perf_counter()
        try:
            return await super().execute(query, params, **kwargs)
        finally:
            key = self.names.get(str(query), str(query)[:40])
            self.spent[key] += time.perf_counter() - started


@contextlib.asynccontextmanager
async def no_pipeline():
    """Stands in for AsyncConnection.pipeline with --statements-apart: statements wait one by one."""
    yield None


def database_files(conn: psycopg.Connection) -> list[Path]:
    """The files of the connected database in the server's data directory (its default tablespace)."""
    (data_directory,) = conn.execute("SHOW data_directory").fetchone()
    (oid,) = conn.execute("SELECT oid FROM pg_database WHERE datname = current_database()").fetchone()
    folder = Path(data_directory, "base", str(oid))
    if not folder.is_dir():
        raise SystemExit(f"--warm-os-cache: cannot read {folder}: the server is not on this machine, or not readable")
    return sorted(path for path in folder.iterdir() if path.is_file())


def warm_os_cache(paths: list[Path], block: int = 1 << 20) -> int:
    """Read every file once, so the OS caches it; the bytes read (files gone meanwhile are skipped)."""
    total = 0
    for path in paths:
        try:
            with path.open("rb", buffering=0) as handle:
                while chunk := handle.read(block):
                    total += len(chunk)
        except FileNotFoundError:
            continue
    return total


def buffers(conn: psycopg.Connection) -> dict[str, tuple[int, int]]:
    conn.execute("SELECT pg_stat_clear_snapshot()")
    return {name: (hits, reads) for name, hits, reads in conn.execute(STATIO_SQL)}


def wal_and_checkpoints(conn: psycopg.Connection) -> tuple[int, int, int]:
    """WAL bytes and full-page images written so far, and checkpoints begun (PostgreSQL 17+)."""
    wal, fpi = conn.execute("SELECT wal_bytes, wal_fpi FROM pg_stat_wal").fetchone()
    (checkpoints,) = conn.execute("SELECT num_timed + num_requested FROM pg_stat_checkpointer").fetchone()
    return int(wal), int(fpi), int(checkpoints)


async def write_pass(
    url: str, scale_bench, source, jobs, extra: dict, growth: str, statements_apart: bool = False
) -> tuple[list[float], collections.Counter]:
    from pgrecall.postgres.database import configure_connection_async

    TimedCursor.spent = collections.Counter()
    conn = await psycopg.AsyncConnection.connect(url, autocommit=True, cursor_factory=TimedCursor)
    await configure_connection_async(conn)
    if statements_apart:
        conn.pipeline = no_pipeline
    timings = []
    try:
        for copy, index in jobs:
            started = time.perf_counter()
            await scale_bench.write_copy(conn, source, copy, index, extra, growth)
            timings.append((time.perf_counter() - started) * 1000)
        await conn.execute("SELECT pg_stat_force_next_flush()")
    finally:
        await conn.close()
    return timings, collections.Counter(TimedCursor.spent)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database", default="pgrecall_scale_bench_mix")
    parser.add_argument("--growth", choices=("copies", "mix"), default="mix")
    parser.add_argument("--writes", type=int, default=100)
    parser.add_argument("--passes", type=int, default=2)
    parser.add_argument("--warm-os-cache", action="store_true", help="read the database's files before the passes")
    parser.add_argument(
        "--compare-commit", action="store_true", help="alternate passes with a commit that waits for the flush"
    )
    parser.add_argument(
        "--statements-apart", action="store_true", help="write without pipelines, to time each statement"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    sys.path.insert(0, str(Path(__file__).parent))  # scale_bench beside it, whichever way this was loaded
    import scale_bench

    from pgrecall.logs import configure_logging
    from pgrecall.postgres import database
    from pgrecall.settings import load_settings
    from pgrecall.worker import store

    configure_logging()
    settings = load_settings()
    url = psycopg.conninfo.make_conninfo(database.database_url(settings), dbname=args.database)
    TimedCursor.names = statement_names()
    with psycopg.connect(url, autocommit=True) as conn:
        (space,) = conn.execute(  # the space scale_bench labelled the clone's vectors with
            """SELECT embedding_space FROM pgrecall.documents WHERE chunk_count > 0
               GROUP BY 1 ORDER BY count(*) DESC LIMIT 1"""
        ).fetchone()
        extra = scale_bench.write_arguments(space)
        source = scale_bench.load_source(conn)
        chunks = scale_bench.chunk_total(conn)
        shared_buffers = conn.execute("SHOW shared_buffers").fetchone()[0]
        warmed = warm_os_cache(database_files(conn)) if args.warm_os_cache else 0
    passes = []
    commit_as_written = store.Q["commit_without_flush"]
    by_commit: dict[str, list[float]] = {}
    for number in range(args.passes):
        waits = args.compare_commit and number % 4 in (1, 2)
        commit = "waits for the flush" if waits else "as the worker commits"
        store.Q["commit_without_flush"] = "SET LOCAL synchronous_commit = on" if waits else commit_as_written
        with psycopg.connect(url, autocommit=True) as conn:
            position = scale_bench.written_copies(conn, args.growth)
            before, wal_before = buffers(conn), wal_and_checkpoints(conn)
        jobs = [scale_bench.copy_at(position + n, len(source.documents)) for n in range(args.writes)]
        timings, spent = asyncio.run(
            write_pass(url, scale_bench, source, jobs, extra, args.growth, args.statements_apart)
        )
        by_commit.setdefault(commit, []).extend(timings)
        time.sleep(0.6)  # the writer's statistics reach the shared counters
        with psycopg.connect(url, autocommit=True) as conn:
            after, wal_after = buffers(conn), wal_and_checkpoints(conn)
        per_relation = {
            name: {
                "hits": round((after[name][0] - before.get(name, (0, 0))[0]) / args.writes, 1),
                "reads": round((after[name][1] - before.get(name, (0, 0))[1]) / args.writes, 1),
            }
            for name in after
            if after[name] != before.get(name, (0, 0))
        }
        total = sum(spent.values())
        passes.append(
            {
                "pass": number + 1,
                "commit": commit,
                "writes": len(timings),
                "p50_ms": round(statistics.median(timings), 1),
                "p95_ms": round(percentile(timings, 95), 1),
                "max_ms": round(max(timings), 1),
                "first_10_p50_ms": round(statistics.median(timings[:10]), 1),
                "statement_ms_per_write": {
                    name: round(seconds * 1000 / len(timings), 2) for name, seconds in spent.most_common()
                },
                "statement_share": {name: round(seconds / total, 3) for name, seconds in spent.most_common(6)},
                "buffers_per_write": dict(sorted(per_relation.items(), key=lambda item: -sum(item[1].values()))),
                "wal_kb_per_write": round((wal_after[0] - wal_before[0]) / args.writes / 1024, 1),
                "full_page_images_per_write": round((wal_after[1] - wal_before[1]) / args.writes, 1),
                "checkpoints_during_pass": wal_after[2] - wal_before[2],
            }
        )
    result: dict[str, Any] = {
        "database": args.database,
        "chunks": chunks,
        "shared_buffers": shared_buffers,
        "os_cache_warmed_mb": round(warmed / 2**20) if args.warm_os_cache else None,
        "statements": "apart, without pipelines" if args.statements_apart else "in pipelines, as the worker writes",
    }
    result["passes"] = passes
    result["by_commit"] = {
        commit: {"writes": len(ms), "p50_ms": round(statistics.median(ms), 1), "p95_ms": round(percentile(ms, 95), 1)}
        for commit, ms in by_commit.items()
    }
    if len(by_commit) == 2:
        ours, waiting = by_commit["as the worker commits"], by_commit["waits for the flush"]
        result["p50_ratio_worker_to_waiting"] = round(statistics.median(ours) / statistics.median(waiting), 3)
    print(json.dumps(result, indent=None if args.json else 2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
