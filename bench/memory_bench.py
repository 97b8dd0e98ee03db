"""Memories: remember-to-searchable time, with and without a running service; concurrent remembers. Prints JSON.

    .venv/bin/python bench/memory_bench.py [--memories 50] [--processes 16] [--distinct 8] [--door]

Remember-to-searchable: the time from calling remember (the in-process
MemoryClient, as pgrecall.api.remember uses it) until a search for the
memory's text (a Searcher, as pgrecall.api.search() uses it) returns the new
memory as its first hit; searches repeat until it does (up to 30 s, else the
memory counts as not found). Measured over MEMORIES memories with no service
running, then over as many others with a real `pgrecall serve` (a subprocess
watching an empty notes folder and the same memory folder, on the same
database): its watcher sees each new note, and its worker should find the
hash unchanged and do nothing (the service's file_* events are counted).

Concurrent remembers: PROCESSES processes, each with a MemoryClient of its own,
load the model, wait at a barrier and then each remember one of DISTINCT texts at once, into
a fresh memory folder. Reports the notes on disk, the index's rows for that
folder, and the duplicates (notes beyond one per distinct text: must be 0).

--door: also remember's near-duplicate check, on and off (force=True) in turn, MEMORIES of each,
in one process: the cost of the check alone, measured in a way the machine's load drifts over
both alike. The check runs in full (the text embedded, the nearest memories queried) at a
threshold of 1, so that no templated text is refused and both sides do the same work.

Runs on the server of PGRECALL_DATABASE_URL (in a database of its own,
pgrecall_memory_bench, dropped first) or else on the embedded server of a
temporary PGRECALL_HOME. The model loads and one memory is remembered and
searched before any clock starts.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shutil
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

BENCH_DATABASE = "pgrecall_memory_bench"
FOUND_TIMEOUT_S = 30.0

SUBJECTS = (
    "the staging cluster", "the billing service", "the search index", "the nightly export", "the CI runners",
    "the mobile app", "the data warehouse", "the auth gateway", "the email worker", "the metrics pipeline",
)  # fmt: skip
CHOICES = (
    "moved to three replicas", "switched to PostgreSQL advisory locks", "runs on Tuesdays only",
    "keeps thirty days of logs", "pins its dependencies with uv", "retries five times with backoff",
    "stores secrets in the vault", "was rewritten in Go", "uses blue-green deploys", "rotates keys monthly",
)  # fmt: skip
REASONS = (
    "after the March outage", "because the on-call load doubled", "to cut the cloud bill",
    "since the audit asked for it", "as the vendor dropped support", "to keep deploys reversible",
)  # fmt: skip


def memory_text(phase: str, number: int) -> str:
    subject = SUBJECTS[number % len(SUBJECTS)]
    choice = CHOICES[(number // len(SUBJECTS) + number) % len(CHOICES)]
    reason = REASONS[number % len(REASONS)]
    return f"Decision {phase}-{number:03d}: {subject} {choice} {reason}."


def summary(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"p50": None, "p95": None, "max": None}
    ordered = sorted(values)
    p95 = statistics.quantiles(ordered, n=20, method="inclusive")[18] if len(ordered) > 1 else ordered[0]
    return {"p50": round(statistics.median(ordered), 1), "p95": round(p95, 1), "max": round(ordered[-1], 1)}


def remember_until_searchable(client, searcher, phase: str, count: int) -> dict:
    """Remember `count` new memories one by one; time each until a search returns it first."""
    from pgrecall.memory.request import remember_request

    to_searchable, remember_only, not_found, searches = [], [], 0, []
    for number in range(count):
        text = memory_text(phase, number)
        started = time.perf_counter()
        saved = client.remember(remember_request(text, source="bench"))
        remembered = time.perf_counter()
        tries = 0
        while True:
            tries += 1
            hits = searcher.search(text, k=1)
            if hits and hits[0].path == saved.memory.path and hits[0].source_root == client.root:
                to_searchable.append((time.perf_counter() - started) * 1000)
                break
            if time.perf_counter() - started > FOUND_TIMEOUT_S:
                not_found += 1
                break
            time.sleep(0.01)
        remember_only.append((remembered - started) * 1000)
        searches.append(tries)
    return {
        "remember_to_searchable_ms": summary(to_searchable),
        "remember_ms": summary(remember_only),
        "searches_until_first_max": max(searches),
        "not_found": not_found,
    }


def door_on_and_off(client, count: int) -> dict:
    """remember with the near-duplicate check and without it (force=True), alternating, new texts each."""
    from pgrecall.memory.request import remember_request

    timings: dict[bool, list[float]] = {True: [], False: []}
    for number in range(count):
        for check in (True, False) if number % 2 else (False, True):
            text = memory_text("D" if check else "F", number)
            started = time.perf_counter()
            client.remember(remember_request(text, source="bench", force=not check))
            timings[check].append((time.perf_counter() - started) * 1000)
    on, off = summary(timings[True]), summary(timings[False])
    return {"check_on_ms": on, "check_off_ms": off, "p50_ratio": round(on["p50"] / off["p50"], 3)}


def _concurrent_one(env: dict, url: str, folder: str, text: str, barrier, results) -> None:
    from pgrecall.embedders.embedding import embedder_for
    from pgrecall.logs import configure_logging
    from pgrecall.memory.request import remember_request
    from pgrecall.settings import load_settings
    from pgrecall.worker.memory.writer import MemoryClient

    configure_logging()  # warnings only, to stderr: stdout is the JSON
    settings = load_settings(env)
    embedder_for(settings).embed_batch(["warm-up"])  # not timed
    client = MemoryClient(settings, url, Path(folder))
    try:
        barrier.wait(300)
        started = time.perf_counter()
        saved = client.remember(remember_request(text, source="bench"))
        results.put((saved.created, saved.memory.id, (time.perf_counter() - started) * 1000))
    finally:
        client.close()


def concurrent_remembers(env: dict, url: str, folder: Path, processes: int, distinct: int) -> dict:
    from tests.service import query

    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(processes)
    results = context.Queue()
    texts = [memory_text("C", number % distinct) for number in range(processes)]
    workers = [
        context.Process(target=_concurrent_one, args=(env, url, str(folder), text, barrier, results)) for text in texts
    ]
    for worker in workers:
        worker.start()
    outcomes = [results.get(timeout=600) for _ in workers]
    for worker in workers:
        worker.join(60)
    notes = [path for path in folder.rglob("*.md")]
    rows = query(
        url,
        "SELECT count(*), count(DISTINCT metadata ->> 'content_sha256') FROM pgrecall.documents "
        "WHERE source_root = %s AND parent_id IS NULL AND error IS NULL",
        (str(folder.resolve()),),
    )[0]
    return {
        "processes": processes,
        "distinct_texts": distinct,
        "notes_on_disk": len(notes),
        "index_rows": rows[0],
        "distinct_in_index": rows[1],
        "duplicates": len(notes) - distinct,
        "created": sum(1 for created, _, _ in outcomes if created),
        "distinct_ids_returned": len({memory_id for _, memory_id, _ in outcomes}),
        "exit_codes": sorted({worker.exitcode for worker in workers}),
        "remember_ms": summary([ms for _, _, ms in outcomes]),
    }


def with_service(env: dict, url: str, home: Path, folder: Path, settings, count: int) -> dict:
    from pgrecall.api.searcher import Searcher
    from pgrecall.worker.memory.writer import MemoryClient
    from tests.service import Process, query, wait_for

    notes = home / "notes"
    notes.mkdir()
    config = home / "config.toml"
    config.write_text(f'[memory]\nfolder = "{folder}"\n', encoding="utf-8")
    service_env = {**env, "PGRECALL_CONFIG": str(config), "PGRECALL_LOG_FORMAT": "json"}
    service = Process(["serve", str(notes)], service_env, home / "serve.log")
    try:
        watched = "SELECT count(*) FROM pgrecall.roots WHERE watch_mode IS NOT NULL AND path = %s"
        wait_for(lambda: query(url, watched, (str(folder),))[0][0] == 1, 120, message="the service watching")
        with MemoryClient(settings, url, folder) as client, Searcher(url, settings, pool_size=2) as searcher:
            result = remember_until_searchable(client, searcher, "S", count)
        time.sleep(2)  # let the watcher's last jobs run before counting them
    finally:
        code = service.stop(signal.SIGTERM)
    events: dict[str, int] = {}
    for event in service.events():
        if event.get("event", "").startswith("file_") and str(event.get("path", "")).startswith("20"):
            events[event["event"]] = events.get(event["event"], 0) + 1
    return {**result, "service_events_for_memories": events, "service_exit_code": code}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=50)
    parser.add_argument("--processes", type=int, default=16)
    parser.add_argument("--distinct", type=int, default=8)
    parser.add_argument("--door", action="store_true", help="also the near-duplicate check on and off, in turn")
    args = parser.parse_args()
    if not 1 <= args.memories <= 1000 or not 1 <= args.distinct <= args.processes <= 64:
        parser.error("--memories from 1 to 1000; 1 <= --distinct <= --processes <= 64")
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.service

    import psycopg
    from psycopg import sql

    from pgrecall.api.searcher import Searcher
    from pgrecall.logs import configure_logging
    from pgrecall.memory.request import remember_request
    from pgrecall.postgres import database
    from pgrecall.postgres.migrator import migrate
    from pgrecall.settings import load_settings
    from pgrecall.worker.memory.writer import MemoryClient

    configure_logging()
    home = Path(tempfile.mkdtemp(prefix="pgrecall-memory-bench-"))
    env = {**os.environ, "PGRECALL_HOME": str(home)}
    external = os.environ.get("PGRECALL_DATABASE_URL")
    try:
        if external:
            with psycopg.connect(external, autocommit=True) as conn:
                conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(BENCH_DATABASE)))
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(BENCH_DATABASE)))
            url = psycopg.conninfo.make_conninfo(external, dbname=BENCH_DATABASE)
        else:
            url = database.database_url(load_settings(env))
        env["PGRECALL_DATABASE_URL"] = url
        settings = load_settings(env)
        with database.connect(url) as conn:
            migrate(conn)

        folder = (home / "memories").resolve()
        with MemoryClient(settings, url, folder) as client, Searcher(url, settings, pool_size=2) as searcher:
            warm = client.remember(remember_request("Warm-up: the model loads before any clock starts."))
            searcher.search(warm.memory.text, k=1)
            client.forget(warm.memory.id)
            started = time.perf_counter()
            without = remember_until_searchable(client, searcher, "N", args.memories)
            without["seconds"] = round(time.perf_counter() - started, 1)
        door = None
        if args.door:
            import dataclasses

            exact = dataclasses.replace(settings, memory_duplicate_similarity=1.0)
            with MemoryClient(exact, url, (home / "door").resolve()) as door_client:
                door_client.remember(remember_request("Warm-up of the door's own folder."))
                door = door_on_and_off(door_client, args.memories)
        served = with_service(env, url, home, folder, settings, args.memories)
        concurrent = concurrent_remembers(env, url, home / "concurrent", args.processes, args.distinct)
    finally:
        if not external:
            database.stop_embedded(load_settings(env | {"PGRECALL_DATABASE_URL": ""}))
        shutil.rmtree(home, ignore_errors=True)
    print(
        json.dumps(
            {
                "memories": args.memories,
                "cpus": os.cpu_count(),
                "without_service": without,
                "with_service": served,
                "concurrent": concurrent,
                **({"door": door} if door is not None else {}),
            }
        )
    )
    return 0 if concurrent["duplicates"] == 0 and not without["not_found"] and not served["not_found"] else 1


if __name__ == "__main__":
    sys.exit(main())
