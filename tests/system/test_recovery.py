"""Killed in the middle of many jobs: after a restart every note is indexed exactly once.

A real `pgrecall index` and a real `pgrecall serve`, 300 notes, SIGKILL while
dozens of jobs are in flight. Their `doing` jobs keep their paths' locks until
the dead worker's heartbeat is PGRECALL_STALLED_SECONDS old; the next run must
recover them without colliding with jobs queued since for the same paths.
"""

from __future__ import annotations

import json
import signal

import pytest

from tests.service import Process, folder_state, in_sync, index_state, query, queue_idle, service_env, wait_for
from tests.support.cli import run_cli
from tests.support.statistics import assert_statistics_consistent

pytestmark = pytest.mark.slow

NOTES = 300
STALLED_SECONDS = "4"


def write_many_notes(root, count=NOTES):
    root.mkdir(parents=True)
    for number in range(count):
        sentences = " ".join(
            f"Entry {number} of the ledger records shipment {number * 7 + s} to harbour {s % 9}." for s in range(12)
        )
        (root / f"note-{number:03}.md").write_text(f"# Note {number}\n\n{sentences}\n")
    return root


def indexed_count(url, root):
    return query(
        url, "SELECT count(*) FROM pgrecall.documents WHERE source_root = %s AND indexed_at IS NOT NULL", (str(root),)
    )[0][0]


def jobs_in_flight(url):
    return query(url, "SELECT count(*) FROM procrastinate_jobs WHERE status = 'doing'")[0][0]


def assert_indexed_exactly_once(url, root):
    assert queue_idle(url)
    assert index_state(url, root) == folder_state(root)  # every note, its current content, no error
    assert len(index_state(url, root)) == NOTES
    per_document = query(
        url,
        """SELECT d.path, d.chunk_count, count(c.id), count(DISTINCT c.ordinal), coalesce(max(c.ordinal) + 1, 0)
           FROM pgrecall.documents d LEFT JOIN pgrecall.chunks c ON c.document_id = d.id
           GROUP BY d.id""",
    )
    assert len(per_document) == NOTES
    for path, chunk_count, chunks, ordinals, span in per_document:
        assert chunk_count == chunks == ordinals == span > 0, path
    assert_statistics_consistent(url)


def kill_mid_run(process, url, root):
    """SIGKILL once a third of the notes are in and jobs are running; returns how many were in flight."""
    wait_for(lambda: indexed_count(url, root) >= NOTES // 3, 240, message="a third indexed")
    in_flight = jobs_in_flight(url)
    process.popen.send_signal(signal.SIGKILL)
    process.popen.wait(10)
    process.log_file.close()
    return in_flight


def test_index_killed_with_jobs_in_flight_is_completed_by_the_next_run(db_url, tmp_path):
    root = write_many_notes(tmp_path / "notes")
    env = service_env(db_url, tmp_path / "home", PGRECALL_WORKERS="32", PGRECALL_STALLED_SECONDS=STALLED_SECONDS)
    victim = Process(["index", str(root), "--quiet"], env, tmp_path / "victim.log")
    in_flight = kill_mid_run(victim, db_url, root)
    assert in_flight >= 8, "the kill must catch many jobs running"
    assert indexed_count(db_url, root) < NOTES

    def run_index():
        result = run_cli("index", str(root), "--json", env=env, timeout=600)
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)

    second = run_index()
    assert second["failed"] == 0 and second["unaccounted"] == []
    assert second["indexed"] + second["unchanged"] >= NOTES - 1  # stale jobs may be superseded by waiting ones
    assert_indexed_exactly_once(db_url, root)

    third = run_index()
    assert (third["indexed"], third["unchanged"], third["failed"]) == (0, NOTES, 0)


def test_serve_killed_with_jobs_in_flight_recovers_on_restart(db_url, tmp_path):
    root = write_many_notes(tmp_path / "notes")
    env = service_env(db_url, tmp_path / "home", PGRECALL_WORKERS="32", PGRECALL_STALLED_SECONDS=STALLED_SECONDS)
    victim = Process(["serve", str(root)], env, tmp_path / "victim.log")
    in_flight = kill_mid_run(victim, db_url, root)
    assert in_flight >= 8, "the kill must catch many jobs running"

    # The restart's reconciliation queues the unindexed notes again while the
    # dead worker's jobs still hold those paths: the two must not collide.
    survivor = Process(["serve", str(root)], env, tmp_path / "survivor.log")
    try:
        wait_for(lambda: in_sync(db_url, root), 240, interval=0.5, message="every note indexed after the restart")
        assert_indexed_exactly_once(db_url, root)
        recovered = survivor.events("stalled_job_retried") + survivor.events("stalled_job_superseded")
        assert recovered, "the dead worker's jobs were recovered"
        assert survivor.events("component_failed") == []
    finally:
        assert survivor.stop() == 0
