"""Freshness and restart cost of `pgrecall serve` on a folder of thousands of notes.

    .venv/bin/python bench/service_bench.py [--edits 20]

Uses the SciFact notes and index that `pgrecall eval ../shared/data/scifact`
built (5,183 notes), on a clone of its database, so nothing is embedded twice:
1. restart over the unchanged folder: `pgrecall serve` starts, reconciles, and
   we report the seconds from start to the `root_reconciled` event, and how many
   files it enqueued or read;
2. freshness: EDITS times, a note gets a new sentence with a unique word, and
   we time from the save until a keyword search returns that note.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import psycopg
from harness.timing import percentile
from psycopg import sql

SOURCE = "pgrecall_eval_scifact"
TARGET = "pgrecall_service_bench"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--edits", type=int, default=20)
    args = parser.parse_args()

    from pgrecall.api.searcher import Searcher
    from pgrecall.postgres import database
    from pgrecall.settings import load_settings

    settings = load_settings()
    notes = settings.home / "eval" / "scifact" / "notes"
    if not notes.is_dir():
        print("run `pgrecall eval ../shared/data/scifact` first", file=sys.stderr)
        return 1
    admin = database.database_url(settings)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(TARGET)))
        conn.execute(sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(sql.Identifier(TARGET), sql.Identifier(SOURCE)))
    url = psycopg.conninfo.make_conninfo(admin, dbname=TARGET)
    files = sum(1 for _ in notes.glob("*.md"))

    work = Path(tempfile.mkdtemp(prefix="pgrecall-service-bench-"))
    log_path = work / "serve.log"
    env = dict(
        os.environ, PGRECALL_DATABASE_URL=url, PGRECALL_LOG_FORMAT="json", PGRECALL_CONFIG=str(work / "none.toml")
    )
    started = time.monotonic()
    with open(log_path, "wb") as log:
        service = subprocess.Popen(
            [sys.executable, "-m", "pgrecall.cli", "serve", str(notes)], env=env, stdout=log, stderr=subprocess.STDOUT
        )
    try:
        reconciled = None
        while reconciled is None:
            if time.monotonic() - started > 300:
                raise SystemExit("no reconciliation within 300 s")
            for line in log_path.read_text(errors="replace").splitlines():
                if '"root_reconciled"' in line:
                    reconciled = json.loads(line)
            time.sleep(0.05)
        restart_seconds = time.monotonic() - started

        latencies = []
        with Searcher(url, settings, pool_size=1) as searcher:
            searcher.search("warm up", k=1, mode="keyword")
            targets = sorted(notes.glob("*.md"))[:: max(1, files // args.edits)][: args.edits]
            for path in targets:
                marker = "zq" + uuid.uuid4().hex[:10]
                original = path.read_text(encoding="utf-8")
                saved = time.monotonic()
                path.write_text(original + f"\nFreshness probe {marker}.\n", encoding="utf-8")
                while True:
                    hits = searcher.search(marker, k=1, mode="keyword", enrich_query=False)
                    if hits and hits[0].path == path.name:
                        latencies.append(time.monotonic() - saved)
                        break
                    if time.monotonic() - saved > 120:
                        raise SystemExit(f"{path.name} not searchable after 120 s")
                    time.sleep(0.02)
                path.write_text(original, encoding="utf-8")
    finally:
        service.terminate()
        service.wait(60)
    result = {
        "notes": files,
        "restart_seconds_to_reconciled": round(restart_seconds, 2),
        "reconcile_seconds": reconciled["seconds"],
        "restart_enqueued": reconciled["enqueued"],
        "restart_files_read": reconciled["to_index"] + reconciled["files_hashed"],
        "freshness_s": {
            "edits": len(latencies),
            "p50": round(statistics.median(latencies), 2),
            "p95": round(percentile(latencies, 95), 2),
            "max": round(max(latencies), 2),
        },
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
