"""The service on a real folder with the real watcher, queue, workers and database.

Each test waits on conditions with timeouts; none sleeps longer than it must.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time

import pytest

from pgrecall.postgres import database
from tests.notes import write_notes
from tests.service import (
    Process,
    folder_state,
    in_sync,
    index_state,
    query,
    queue_idle,
    service_env,
    texts,
    wait_for,
)

pytestmark = pytest.mark.slow


def chunk_ids(url, path):
    return [
        row[0]
        for row in query(
            url,
            "SELECT c.id FROM pgrecall.chunks c JOIN pgrecall.documents d ON d.id = c.document_id WHERE d.path = %s ORDER BY c.ordinal",
            (path,),
        )
    ]


@pytest.fixture
def notes(tmp_path):
    return write_notes(
        tmp_path / "notes",
        {
            "a.md": "# A\n\nAlpha note about lighthouses.",
            "b.md": "# B\n\nBeta note about harbours.",
            "sub/c.md": "# C\n\nGamma note about tides.",
            "sub/d.txt": "Delta note about ferries.",
        },
    )


@pytest.fixture
def serve(db_url, tmp_path):
    started = []

    def start(root, name="serve", **extra):
        process = Process(
            ["serve", str(root)], service_env(db_url, tmp_path / "home", **extra), tmp_path / f"{name}.log"
        )
        started.append(process)
        return process

    yield start
    for process in started:
        if process.popen.poll() is None:
            process.kill()


def test_the_index_follows_the_folder(serve, db_url, notes):
    service = serve(notes)
    wait_for(lambda: in_sync(db_url, notes), 90, message="initial index")
    moved_ids = chunk_ids(db_url, "sub/c.md")

    (notes / "new.md").write_text("# New\n\nA brand new note about glaciers.")
    (notes / "a.md").write_text("# A\n\nAlpha note, edited: now about volcanoes.")
    wait_for(lambda: "volcanoes" in texts(db_url, "a.md") and "glaciers" in texts(db_url, "new.md"), 30, message="edit")

    # vim's save: probe file, rename to a backup, write anew, delete the backup.
    (notes / "4913").write_text("")
    (notes / "4913").unlink()
    os.rename(notes / "b.md", notes / "b.md~")
    (notes / "b.md").write_text("# B\n\nBeta note saved by vim: about canals.")
    (notes / "b.md~").unlink()
    # An atomic save: write a temporary file, rename it onto the note.
    (notes / ".new.md.tmp").write_text("# New\n\nGlaciers retreat, saved atomically.")
    os.replace(notes / ".new.md.tmp", notes / "new.md")
    wait_for(lambda: "canals" in texts(db_url, "b.md") and "atomically" in texts(db_url, "new.md"), 30, message="saves")

    # A renamed folder keeps its chunks and embeddings.
    os.rename(notes / "sub", notes / "moved")
    wait_for(lambda: chunk_ids(db_url, "moved/c.md") == moved_ids, 30, message="folder move")
    renamed_ids = chunk_ids(db_url, "new.md")
    os.rename(notes / "new.md", notes / "renamed.md")
    wait_for(lambda: chunk_ids(db_url, "renamed.md") == renamed_ids, 30, message="file rename")

    (notes / "moved" / "d.txt").unlink()
    wait_for(lambda: in_sync(db_url, notes), 30, message="delete")

    # A burst: 20 saves in two seconds, indexed once with the final content. Once more for each
    # pause a loaded machine made between two saves long enough to near the 0.5 s debounce.
    saved = []
    for number in range(20):
        (notes / "burst.md").write_text(f"# Burst\n\nVersion {number} of a note about meteors.")
        saved.append(time.monotonic())
        time.sleep(0.1)
    wait_for(lambda: "Version 19" in texts(db_url, "burst.md"), 60, message="burst")
    wait_for(lambda: in_sync(db_url, notes), 60, message="final sync")
    burst_jobs = [e for e in service.events("file_indexed") if e.get("path") == "burst.md"]
    pauses = sum(b - a >= 0.35 for a, b in zip(saved, saved[1:], strict=False))
    assert 1 <= len(burst_jobs) <= 1 + pauses, (burst_jobs, pauses)

    assert set(index_state(db_url, notes)) == {"a.md", "b.md", "renamed.md", "moved/c.md", "burst.md"}
    assert service.stop() == 0
    assert service.events("service_stopped")


def test_restart_reconciles_changes_made_while_stopped(serve, db_url, notes):
    first = serve(notes, name="first")
    wait_for(lambda: in_sync(db_url, notes), 90, message="initial index")
    assert first.stop() == 0
    kept_ids = chunk_ids(db_url, "b.md")

    (notes / "a.md").write_text("# A\n\nChanged while the service was down.")
    (notes / "sub" / "d.txt").unlink()
    (notes / "added.md").write_text("# Added\n\nWritten while nobody watched.")
    os.rename(notes / "b.md", notes / "b-renamed.md")
    os.utime(notes / "sub" / "c.md")  # touched, content unchanged

    second = serve(notes, name="second")
    wait_for(lambda: in_sync(db_url, notes), 60, message="reconciled")
    assert "down" in texts(db_url, "a.md")
    assert chunk_ids(db_url, "b-renamed.md") == kept_ids
    reconciled = second.events("root_reconciled")[0]
    assert (reconciled["to_index"], reconciled["to_remove"], reconciled["moves"]) == (3, 1, 1)
    indexed = {e["path"] for e in second.events("file_indexed")}
    assert indexed == {"a.md", "added.md"}  # c.md was only touched: read, not embedded
    assert second.stop() == 0


def test_sigkill_in_the_middle_of_a_job_loses_nothing(db_url, tmp_path):
    from pgrecall.worker import tasks

    root = write_notes(
        tmp_path / "big",
        {
            "long.md": "# Long\n\n"
            + "\n\n".join(
                f"Paragraph {i}: the committee reviewed budget line {i} and approved a revised estimate for item {i}."
                for i in range(900)
            )
        },
    )

    async def enqueue():
        app = tasks.build_app(db_url)
        async with app.open_async():
            await tasks.enqueue(app, tasks.INDEX_TASK, str(root), ["long.md"])

    asyncio.run(enqueue())
    env = service_env(db_url, tmp_path / "home")
    victim = Process(["worker"], env, tmp_path / "victim.log")
    wait_for(
        lambda: query(db_url, "SELECT count(*) FROM procrastinate_jobs WHERE status = 'doing'")[0][0] == 1,
        60,
        message="job started",
    )
    time.sleep(1.0)  # embedding is under way
    victim.popen.send_signal(signal.SIGKILL)
    victim.popen.wait(10)
    victim.log_file.close()
    assert query(db_url, "SELECT count(*) FROM pgrecall.chunks") == [(0,)]  # nothing half-written

    survivor = Process(["worker"], env, tmp_path / "survivor.log")
    try:
        wait_for(
            lambda: queue_idle(db_url) and index_state(db_url, root) == folder_state(root), 120, message="recovered"
        )
        assert survivor.events("stalled_job_retried") or survivor.events("file_indexed")
        chunks = query(db_url, "SELECT count(*), count(DISTINCT ordinal), max(ordinal) + 1 FROM pgrecall.chunks")[0]
        assert chunks[0] == chunks[1] == chunks[2] > 10  # every chunk once, no gaps
        assert len(survivor.events("file_indexed")) == 1
    finally:
        assert survivor.stop() == 0


def test_two_workers_share_one_queue(db_url, tmp_path):
    from pgrecall.worker import tasks

    notes = {f"n{i:02}.md": f"# Note {i}\n\nShared queue note {i} about topic {i % 5}." for i in range(40)}
    root = write_notes(tmp_path / "notes", notes)

    async def enqueue():
        app = tasks.build_app(db_url)
        async with app.open_async():
            await tasks.enqueue(app, tasks.INDEX_TASK, str(root), sorted(notes))

    asyncio.run(enqueue())
    env = service_env(db_url, tmp_path / "home", PGRECALL_WORKERS="2")
    workers = [Process(["worker"], env, tmp_path / f"worker{n}.log") for n in (1, 2)]
    try:
        wait_for(lambda: in_sync(db_url, root), 120, message="queue drained")
    finally:
        for worker in workers:
            assert worker.stop() == 0
    handled = [e["path"] for w in workers for e in w.events("file_indexed")]
    assert sorted(handled) == sorted(notes)  # each file once, across both workers
    assert all(w.events("file_indexed") for w in workers)
    assert query(db_url, "SELECT count(*) FROM pgrecall.chunks") == [(40,)]


def test_service_survives_a_database_restart(serve, db_url, notes, embedded_server_settings):
    if embedded_server_settings is None:
        pytest.skip("restarts only the embedded test server")
    service = serve(notes)
    wait_for(lambda: in_sync(db_url, notes), 90, message="initial index")
    database.stop_embedded(embedded_server_settings)
    (notes / "a.md").write_text("# A\n\nWritten while the database was down: about comets.")
    time.sleep(1.5)  # the watcher sees the change while the database is away
    database.start_embedded(embedded_server_settings)
    wait_for(lambda: "comets" in texts(db_url, "a.md"), 90, message="indexed after the restart")
    assert service.popen.poll() is None
    assert service.stop() == 0
