"""The write path's cost per document, the model's time taken out; prints JSON.

    .venv/bin/python bench/write_bench.py [--documents 2000] [--writers 1,2,4]
        [--compare-without 0010_drop_unread_chunk_fields.sql] [--json]

Turns the first DOCUMENTS SciFact abstracts into Markdown notes (title as
heading), parses and chunks them with the real adapter and chunker, and gives
every chunk a random unit vector, all before the clock starts. Then writes
them through the real write path, `pgrecall.worker.store.write_document`
(one transaction per document: binary COPY, postings, BM25 statistics, HNSW),
into a database of the bench's own, migrated for the purpose, on the server
of PGRECALL_DATABASE_URL or else on the embedded server of a temporary
PGRECALL_HOME. Reports documents/s and the per-document write time (p50, p95).

--compare-without NAME migrates a second database without migration NAME
(the schema as it was before it) and writes the same documents into both,
batch by batch in alternation (A then B, then B then A), so that both see the
same load on the machine and the same index sizes; the ratio is what to read,
absolute times vary from run to run.

--writers N (or a list, 1,2,4) runs N writer processes at once, each writing
its share of every batch through its own connection; each count runs on
fresh databases. A document's time is measured in the process writing it;
documents/s is over the wall time from the first writer's start of a batch to
the last one's end.

The writers are processes calling `store.write_document` with precomputed
vectors, not `pgrecall worker` processes: a worker embeds with the model
(seconds of CPU per batch, which would drown the write path's cost) and spends
its own CPU on the queue (fetching jobs, heartbeats); what is measured here is
the write path's cost and its contention on one database, which is the same
statements, connections and transactions a worker runs per document.

Per writer count: documents per CPU-second, the CPU time of the writer
processes (over their batches) and of every PostgreSQL process (the children
of the embedded server's postmaster, the sampler's own backend left out; null
on an external server) together; and lock waits: every ~20 ms a separate
connection samples pg_stat_activity for the bench databases' active backends,
counting samples by wait event (CPU when none), and for lock waits the
statement that waits (its verb and table).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import inspect
import json
import multiprocessing
import os
import re
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
from harness.timing import percentile

DEFAULT_CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "scifact"
ROOT = "/write-bench/scifact"
CURRENT = "current"
BASELINE = "baseline"


def load_documents(corpus: Path, limit: int, seed: int) -> tuple[list, str]:
    """[(document, chunks, vectors)] and the chunking signature: parsed, chunked, vectors made."""
    from pgrecall.embedders.embedding import DIMENSIONS, embedder_for
    from pgrecall.settings import load_settings
    from pgrecall.worker.adapters import markdown
    from pgrecall.worker.chunk import chunk_sections, chunking_signature, token_budget

    settings = load_settings()
    embedder = embedder_for(settings)  # its tokenizer counts word pieces
    max_tokens = token_budget(settings.chunk_tokens, embedder.max_tokens)
    rng = np.random.default_rng(seed)
    documents = []
    with open(corpus / "corpus.jsonl", encoding="utf-8") as lines:
        for line in lines:
            if len(documents) >= limit:
                break
            entry = json.loads(line)
            title = " ".join(entry.get("title", "").split()) or entry["_id"]
            text = f"# {title}\n\n{entry['text']}\n"
            digest = hashlib.sha256(text.encode()).hexdigest()
            document = markdown.parse(f"{entry['_id']}.md", text, digest)
            chunks = chunk_sections(document.sections, embedder.count_tokens, max_tokens=max_tokens)
            vectors = rng.standard_normal((len(chunks), DIMENSIONS))
            vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)
            documents.append((document, chunks, vectors))
    return documents, chunking_signature(settings.chunk_tokens)


def prepare_database(server_url: str, name: str, without: str | None) -> str:
    from pgrecall.postgres import database
    from pgrecall.postgres.migrator import bundled_migrations, migrate

    url = database.ensure_database(server_url, name, fresh=True)
    migrations = bundled_migrations()
    if without is not None:
        if without not in {m.name for m in migrations}:
            raise SystemExit(f"no migration {without!r}")
        migrations = [m for m in migrations if m.name != without]
    with database.connect(url) as conn:
        migrate(conn, migrations)
    return url


def drop_database(server_url: str, name: str) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def writer(
    number: int, writers: int, urls: dict, phases: list, documents: list, chunking: str, barrier, results, release
):
    """One writer process: its share of each phase's batch, in step with the others.

    Its connections stay open until `release` is set, so that the CPU time of
    their backends can be read before those exit."""
    from pgrecall.logs import configure_logging

    configure_logging()  # warnings on stderr: stdout is the result's
    asyncio.run(_write_phases(number, writers, urls, phases, documents, chunking, barrier, results, release))


async def _write_phases(number, writers, urls, phases, documents, chunking, barrier, results, release) -> None:
    import psycopg

    from pgrecall.postgres import database
    from pgrecall.worker import store

    connections = {}
    for label, url in urls.items():
        connections[label] = await psycopg.AsyncConnection.connect(url)
        await database.configure_connection_async(connections[label])
    timings = []
    extra = {}
    if "embedding_space" in inspect.signature(store.write_document).parameters:
        extra["embedding_space"] = "write-bench"
    cpu_started = sum(os.times()[:2])
    try:
        for label, batch in phases:
            mine = batch[number::writers]
            barrier.wait()
            started = time.perf_counter()
            per_document = []
            for index in mine:
                document, chunks, vectors = documents[index]
                before = time.perf_counter()
                await store.write_document(
                    connections[label],
                    root=ROOT,
                    document=document,
                    chunks=chunks,
                    vectors=vectors,
                    info=None,
                    chunking=chunking,
                    **extra,
                )
                per_document.append((time.perf_counter() - before) * 1000)
            timings.append((label, started, time.perf_counter(), per_document))
        cpu_seconds = sum(os.times()[:2]) - cpu_started
        results.put((number, timings, cpu_seconds))
        release.wait(600)
    finally:
        for conn in connections.values():
            await conn.close()


class ServerCpu:
    """CPU seconds of the embedded server's processes (postmaster and its children)."""

    def __init__(self, postmaster_pid: int | None):
        self.postmaster_pid = postmaster_pid

    def snapshot(self, leave_out: set[int]) -> dict[int, float] | None:
        if self.postmaster_pid is None:
            return None
        import psutil

        try:
            postmaster = psutil.Process(self.postmaster_pid)
            processes = [postmaster, *postmaster.children(recursive=True)]
        except psutil.NoSuchProcess:
            return None
        seconds = {}
        for process in processes:
            if process.pid in leave_out:
                continue
            try:
                times = process.cpu_times()
            except psutil.NoSuchProcess:
                continue
            seconds[process.pid] = times.user + times.system
        return seconds

    @staticmethod
    def used(before: dict[int, float] | None, after: dict[int, float] | None) -> float | None:
        """CPU seconds between two snapshots; a process started in between counts whole (one that
        ended in between is lost: the bench's connections stay open until the end)."""
        if before is None or after is None:
            return None
        return sum(seconds - before.get(pid, 0.0) for pid, seconds in after.items())


LOCKED_STATEMENT = re.compile(r"\b(INSERT INTO|UPDATE|DELETE FROM|SELECT)\s+.*?(pgrecall\.\w+)", re.S | re.I)


class WaitSampler(threading.Thread):
    """Samples what the bench databases' active backends wait on, every `interval` seconds."""

    def __init__(self, server_url: str, databases: list[str], interval: float = 0.02):
        super().__init__(daemon=True)
        import psycopg

        self.conn = psycopg.connect(server_url, autocommit=True)
        self.pid = self.conn.execute("SELECT pg_backend_pid()").fetchone()[0]
        self.databases = databases
        self.interval = interval
        self.samples = 0
        self.events: dict[str, int] = {}
        self.lock_statements: dict[str, int] = {}
        self.halt = threading.Event()

    def run(self) -> None:
        query = """SELECT wait_event_type, wait_event, query FROM pg_stat_activity
                   WHERE datname = ANY(%s) AND state = 'active' AND pid <> pg_backend_pid()
                     AND backend_type = 'client backend'"""
        while not self.halt.is_set():
            self.samples += 1
            for kind, event, statement in self.conn.execute(query, (self.databases,)).fetchall():
                key = f"{kind}/{event}" if kind else "CPU"
                self.events[key] = self.events.get(key, 0) + 1
                if kind == "Lock":
                    found = LOCKED_STATEMENT.search(statement or "")
                    label = f"{key} {found.group(1).upper()} {found.group(2)}" if found else f"{key} ?"
                    self.lock_statements[label] = self.lock_statements.get(label, 0) + 1
            self.halt.wait(self.interval)

    def stop(self) -> dict:
        self.halt.set()
        self.join()
        self.conn.close()
        return {
            "samples": self.samples,
            "by_wait_event": dict(sorted(self.events.items(), key=lambda item: -item[1])),
            "lock_waits_by_statement": dict(sorted(self.lock_statements.items(), key=lambda item: -item[1])),
        }


def run_once(
    server_url: str,
    documents: list,
    chunking: str,
    writers: int,
    batch: int,
    without: str | None,
    server_cpu: ServerCpu,
) -> dict:
    labels = [CURRENT] + ([BASELINE] if without else [])
    names = {label: f"pgrecall_write_bench_{label}" for label in labels}
    urls = {
        label: prepare_database(server_url, names[label], without if label == BASELINE else None) for label in labels
    }
    batches = [list(range(start, min(start + batch, len(documents)))) for start in range(0, len(documents), batch)]
    phases = [
        (label, indices)
        for number, indices in enumerate(batches)
        for label in (labels if number % 2 == 0 else labels[::-1])
    ]
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(writers)
    results = context.Queue()
    release = context.Event()
    processes = [
        context.Process(target=writer, args=(n, writers, urls, phases, documents, chunking, barrier, results, release))
        for n in range(writers)
    ]
    sampler = WaitSampler(server_url, list(names.values()))
    cpu_before = server_cpu.snapshot({sampler.pid})
    sampler.start()
    for process in processes:
        process.start()
    try:
        collected = [results.get(timeout=3600) for _ in processes]
        waits = sampler.stop()
        cpu_after = server_cpu.snapshot({sampler.pid})  # the writers' backends still alive
    finally:
        release.set()
        for process in processes:
            process.join(60)
        if sampler.is_alive():
            sampler.stop()
    if any(process.exitcode != 0 for process in processes):
        raise SystemExit("a writer process failed")
    run: dict = {"writers": writers}
    for label in labels:
        seconds = 0.0
        per_document: list[float] = []
        for phase, _ in enumerate(phases):
            spans = [timings[phase] for _, timings, _ in collected]
            if spans[0][0] != label:
                continue
            seconds += max(end for _, _, end, _ in spans) - min(start for _, start, _, _ in spans)
            per_document += [ms for *_, times in spans for ms in times]
        run[label] = {
            "documents_per_s": round(len(per_document) / seconds, 1),
            "document_p50_ms": round(statistics.median(per_document), 2),
            "document_p95_ms": round(percentile(per_document, 95), 2),
            "seconds": round(seconds, 1),
        }
    writer_cpu = sum(cpu for *_, cpu in collected)
    postgres_cpu = server_cpu.used(cpu_before, cpu_after)
    written = len(documents) * len(labels)
    run["cpu"] = {
        "writer_s": round(writer_cpu, 2),
        "postgres_s": None if postgres_cpu is None else round(postgres_cpu, 2),
        "documents_per_cpu_s": None if postgres_cpu is None else round(written / (writer_cpu + postgres_cpu), 1),
    }
    run["waits"] = waits
    if without:
        run["current_to_baseline"] = {
            "documents_per_s": round(run[CURRENT]["documents_per_s"] / run[BASELINE]["documents_per_s"], 3),
            "document_p50_ms": round(run[CURRENT]["document_p50_ms"] / run[BASELINE]["document_p50_ms"], 3),
            "document_p95_ms": round(run[CURRENT]["document_p95_ms"] / run[BASELINE]["document_p95_ms"], 3),
        }
    for label, url in urls.items():
        run[label].update(schema_check(url))
    for name in names.values():
        drop_database(server_url, name)
    return run


def schema_check(url: str) -> dict:
    """What was written, and whether the schema holds what the comparison is about."""
    from pgrecall.postgres import database

    with database.connect(url) as conn:
        chunks = conn.execute("SELECT count(*) FROM pgrecall.chunks").fetchone()[0]
        postings = conn.execute("SELECT count(*) FROM pgrecall.postings").fetchone()[0]
        gin = conn.execute("SELECT pg_relation_size(to_regclass('pgrecall.chunks_fts'))").fetchone()[0]
        metadata = conn.execute(
            "SELECT count(*) FROM information_schema.columns"
            " WHERE table_schema = 'pgrecall' AND table_name = 'chunks' AND column_name = 'metadata'"
        ).fetchone()[0]
    return {
        "chunks_written": chunks,
        "postings_written": postings,
        "gin_index_bytes": gin,
        "metadata_column": bool(metadata),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--documents", type=int, default=2000)
    parser.add_argument("--writers", default="1", help="writer processes, or a list of counts: 1,2,4")
    parser.add_argument("--batch", type=int, default=50, help="documents per batch (alternation step)")
    parser.add_argument("--compare-without", metavar="MIGRATION", help="also write a database migrated without it")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", action="store_true", help="print the result as JSON instead of a table")
    args = parser.parse_args()
    writer_counts = [int(n) for n in args.writers.split(",") if n]
    if not 1 <= args.documents <= 100_000 or not all(1 <= n <= 16 for n in writer_counts) or args.batch < 1:
        parser.error("--documents from 1 to 100000, --writers from 1 to 16, --batch at least 1")

    from pgrecall.logs import configure_logging
    from pgrecall.postgres import database
    from pgrecall.settings import load_settings

    configure_logging()
    home = None
    if os.environ.get("PGRECALL_DATABASE_URL"):
        server_url = os.environ["PGRECALL_DATABASE_URL"]
    else:
        home = Path(tempfile.mkdtemp(prefix="pgrecall-write-bench-"))
        server_url = database.start_embedded(load_settings({**os.environ, "PGRECALL_HOME": str(home)}))
    try:
        prepared = time.perf_counter()
        documents, chunking = load_documents(args.corpus, args.documents, args.seed)
        prepare_seconds = time.perf_counter() - prepared
        server_cpu = ServerCpu(None if home is None else postmaster_pid(home / "pgdata"))
        runs = [
            run_once(server_url, documents, chunking, writers, args.batch, args.compare_without, server_cpu)
            for writers in writer_counts
        ]
    finally:
        if home is not None:
            database.stop_embedded(load_settings({**os.environ, "PGRECALL_HOME": str(home)}))
            shutil.rmtree(home, ignore_errors=True)
    result = {
        "documents": len(documents),
        "chunks": sum(len(chunks) for _, chunks, _ in documents),
        "vectors": "random unit vectors, made before timing",
        "batch": args.batch,
        "baseline": f"without {args.compare_without}" if args.compare_without else None,
        "prepare_seconds": round(prepare_seconds, 1),
        "runs": runs,
    }
    print(json.dumps(result) if args.json else table(result))
    return 0


def postmaster_pid(pgdata: Path) -> int | None:
    try:
        return int((pgdata / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def table(result: dict) -> str:
    """One line per writer count: throughput, CPU cost and what the backends waited on."""
    lines = [
        f"{result['documents']} documents, {result['chunks']} chunks, {result['vectors']}",
        f"{'writers':>7} {'docs/s':>8} {'p50 ms':>7} {'p95 ms':>7} {'writer cpu s':>12} {'pg cpu s':>9}"
        f" {'docs/cpu-s':>10}  lock waits (of samples)",
    ]
    for run in result["runs"]:
        current, cpu, waits = run[CURRENT], run["cpu"], run["waits"]
        locks = sum(n for event, n in waits["by_wait_event"].items() if event.startswith("Lock/"))
        lines.append(
            f"{run['writers']:>7} {current['documents_per_s']:>8} {current['document_p50_ms']:>7}"
            f" {current['document_p95_ms']:>7} {cpu['writer_s']:>12} {cpu['postgres_s']!s:>9}"
            f" {cpu['documents_per_cpu_s']!s:>10}  {locks} of {waits['samples']}"
        )
    for run in result["runs"]:
        events = ", ".join(f"{event} {n}" for event, n in run["waits"]["by_wait_event"].items())
        lines.append(f"{run['writers']} writers, wait events of active backends: {events or 'none'}")
        for statement, n in run["waits"]["lock_waits_by_statement"].items():
            lines.append(f"    {statement}: {n}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
