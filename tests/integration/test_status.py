"""pgrecall.status on a real database: what `pgrecall status`, `failures` and /health report."""

from __future__ import annotations

import asyncio
import json

import psycopg
import pytest

from pgrecall import status
from pgrecall.api import reader
from pgrecall.postgres import database, queries
from pgrecall.worker import scan, tasks
from tests.notes import ERROR_CODE_NOTES, write_notes

# Every field of `pgrecall status --json`: scripts read them.
REPORT_FIELDS = {"documents", "chunks", "failed", "skipped", "last_indexed_at", "queue", "roots", "database"}
REPORT_FIELDS |= {"embedding_spaces", "redactions", "languages"}
QUEUE_FIELDS = {"todo", "doing", "failed", "oldest_waiting_since", "oldest_waiting_age_s", "stalled"}
ROOT_FIELDS = {"name", "path", "indexed", "files", "last_indexed_at"}
ROOT_FIELDS |= {"watch_mode", "watch_mode_since", "watcher_seen_at", "last_event_at"}
ROOT_FIELDS |= {"archived", "archive_folder"}  # archive roots (worker/archive.py)
ROOT_FIELDS |= {"followed", "watched"}  # a registered root; a running watcher holds it (worker/watch_lease.py)


def count_files(folder):
    return sum(1 for _ in scan.iter_files(folder))


def enqueue(url: str, root: str, paths: list[str], elsewhere: list[str] = ()) -> None:
    """Jobs for `paths` in pgrecall's queue and for `elsewhere` in another queue; no worker runs them."""

    async def run() -> None:
        app = tasks.build_app(url)
        async with app.open_async():
            await tasks.enqueue(app, tasks.INDEX_TASK, root, paths)
            for path in elsewhere:
                await app.configure_task(tasks.INDEX_TASK, queue="elsewhere").defer_async(root=root, path=path)

    asyncio.run(run())


def test_report_counts_documents_and_every_root_with_its_watch_state(index, settings, db_url, tmp_path):
    notes = write_notes(tmp_path / "notes", {**ERROR_CODE_NOTES, "junk.bin": b"\x00\x01"})
    other = write_notes(tmp_path / "other", {"a.md": "# A\n\nLighthouses along the northern coast."})
    index(notes, other)
    service = queries.load("service.sql")
    with database.connect(db_url) as conn:
        # A root the watcher watches by events, and one named but never watched, whose folder is gone.
        conn.execute(
            "INSERT INTO pgrecall.roots (name, path) VALUES ('notes', %s), ('gone', %s)",
            (str(notes), str(tmp_path / "gone")),
        )
        conn.execute(service["set_watch_mode"], {"mode": "events", "path": str(notes)})
        conn.execute(service["touch_watcher"], {"path": str(notes), "last_event_at": "2025-03-01T10:00:00Z"})
        report = status.report(conn, settings, count_files=count_files)
        without_counter = status.report(conn, settings)

    assert set(report) == REPORT_FIELDS and set(report["queue"]) == QUEUE_FIELDS
    assert all(set(root) == ROOT_FIELDS for root in report["roots"])
    json.dumps(report, default=str)  # what `status --json` prints
    assert (report["documents"], report["chunks"], report["skipped"], report["failed"]) == (5, 5, 1, 0)
    assert report["last_indexed_at"] is not None
    assert report["database"] == "embedded"
    assert report["queue"] == {
        "todo": 0,
        "doing": 0,
        "failed": 0,
        "oldest_waiting_since": None,
        "oldest_waiting_age_s": None,
        "stalled": 0,
    }

    by_path = {root["path"]: root for root in report["roots"]}
    assert (
        [root["path"] for root in report["roots"]]
        == sorted(by_path)
        == [str(tmp_path / p) for p in ("gone", "notes", "other")]
    )
    watched, unnamed, gone = by_path[str(notes)], by_path[str(other)], by_path[str(tmp_path / "gone")]
    assert (watched["name"], watched["indexed"], watched["files"], watched["watch_mode"]) == ("notes", 4, 5, "events")
    assert watched["watch_mode_since"] and watched["watcher_seen_at"] and watched["last_indexed_at"]
    assert watched["last_event_at"].isoformat().startswith("2025-03-01T10:00:00")
    assert (watched["followed"], watched["watched"]) == (True, False)  # a mode recorded, but no watcher runs
    # A folder only indexed is no root: its files are not counted against it.
    assert (unnamed["name"], unnamed["indexed"], unnamed["files"], unnamed["watch_mode"]) == (None, 1, None, None)
    assert (unnamed["followed"], unnamed["watched"]) == (False, False)
    assert unnamed["watcher_seen_at"] is None and unnamed["last_event_at"] is None
    assert (gone["name"], gone["indexed"], gone["files"], gone["last_indexed_at"]) == ("gone", 0, None, None)
    assert [root["files"] for root in without_counter["roots"]] == [None, None, None]


def test_queue_counts_waiting_running_failed_and_stalled_jobs_of_pgrecall_only(settings, db_url, tmp_path):
    enqueue(db_url, str(tmp_path), ["a.md", "b.md", "c.md", "d.md"], elsewhere=["x.md", "y.md"])
    with database.connect(db_url, autocommit=True) as conn:
        empty = status.queue_status(conn)
        register = "SELECT worker_id FROM procrastinate_register_worker_v1()"
        dead = conn.execute(register).fetchone()[0]
        alive = conn.execute(register).fetchone()[0]
        fetch = "SELECT id FROM procrastinate_fetch_job_v2(ARRAY[%s]::varchar[], %s)"
        conn.execute(fetch, (status.QUEUE, dead))
        conn.execute(fetch, (status.QUEUE, alive))
        failed = conn.execute(fetch, (status.QUEUE, alive)).fetchone()[0]
        conn.execute("SELECT procrastinate_finish_job_v1(%s, 'failed', false)", (failed,))
        conn.execute(
            "UPDATE procrastinate_workers SET last_heartbeat = now() - interval '1 hour' WHERE id = %s", (dead,)
        )
        queue = status.queue_status(conn)
        stalled = status.stalled_job_count(conn, 60)
        not_yet = status.stalled_job_count(conn, 7200)
        conn.execute("SELECT procrastinate_unregister_worker_v1(%s)", (dead,))  # its job loses its worker
        orphaned = status.stalled_job_count(conn, 7200)

    assert (empty["todo"], empty["doing"], empty["failed"]) == (4, 0, 0)
    assert (queue["todo"], queue["doing"], queue["failed"]) == (1, 2, 1)
    assert queue["oldest_waiting_since"] is not None and 0 <= queue["oldest_waiting_age_s"] < 600
    assert (stalled, not_yet, orphaned) == (1, 0, 1)


def test_failures_list_each_file_with_its_stage(index, db_url, tmp_path):
    notes = write_notes(
        tmp_path / "notes", {**ERROR_CODE_NOTES, "junk.bin": b"\x00\x01", "latin1.txt": b"caf\xe9 cr\xe8me"}
    )
    index(notes)
    with database.connect(db_url) as conn:
        rows = status.failures(conn)
        first = status.failures(conn, limit=1)
    assert [(row["source_root"], row["path"], row["error_stage"]) for row in rows] == [
        (str(notes), "junk.bin", "detect"),
        (str(notes), "latin1.txt", "parse"),
    ]
    assert rows[0]["error"] == "unsupported file type '.bin'" and rows[0]["kind"] == "unsupported"
    assert "UTF-8" in rows[1]["error"]
    assert first == rows[:1]


def test_health_through_the_reader_login_counts_only_pgrecall_queue(index, settings, db_url, tmp_path):
    index(write_notes(tmp_path / "notes", ERROR_CODE_NOTES))
    enqueue(db_url, str(tmp_path / "notes"), ["new-1.md", "new-2.md"], elsewhere=["x.md"])
    with psycopg.connect(reader.search_login(settings, db_url)) as conn:
        assert conn.execute("SELECT current_user").fetchone()[0] == reader.READER
        health = status.health(conn)
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("SELECT count(*) FROM procrastinate_jobs")  # the queue only through queue_depth(text)
    assert (health["documents"], health["queue_depth"]) == (4, 2)
    assert health["last_indexed_at"] is not None


def test_queue_depth_takes_the_queue_name_and_only_the_reader_may_call_it(db_url):
    with database.connect(db_url) as conn:
        signatures = conn.execute(
            "SELECT p.oid::regprocedure::text FROM pg_proc p WHERE p.proname = 'queue_depth'"
        ).fetchall()
        reader_may = conn.execute(
            "SELECT has_function_privilege('pgrecall_reader', 'pgrecall.queue_depth(text)', 'EXECUTE')"
        ).fetchone()[0]
        public_may = conn.execute(
            "SELECT count(*) FROM pg_proc p, aclexplode(p.proacl) a WHERE p.proname = 'queue_depth' AND a.grantee = 0"
        ).fetchone()[0]
    assert signatures == [("pgrecall.queue_depth(text)",)]
    assert reader_may and public_may == 0


def test_memories_count_notes_on_disk_and_in_the_index(index, settings, db_url, tmp_path):
    from pgrecall.worker.memory.files import Memory, MemoryFolder, relative_path

    folder = MemoryFolder(tmp_path / "memories")
    for number, text in enumerate(("Staging runs three replicas.", "Deploys go out on Tuesdays."), 1):
        memory_id = f"{number:012x}"
        created = "2026-11-30T10:00:00Z"
        path = relative_path(memory_id, created, None, text)
        folder.write(Memory(memory_id, path, None, text, (), None, {}, created, created))
    (folder.folder / "readme.md").write_text("# Not a memory\n\nA note the user put here.")  # neither count
    index(folder.folder)  # the first two and the readme: the index lags behind the third
    third = "The on-call rota changes on Mondays."
    folder.write(Memory("00000000000c", relative_path("00000000000c", "2026-11-30T10:00:00Z", None, third), None,
                        third, (), None, {}, "2026-11-30T10:00:00Z", "2026-11-30T10:00:00Z"))  # fmt: skip

    def count_memories(path):
        return sum(1 for _ in MemoryFolder(path).memories())

    with database.connect(db_url) as conn:
        report = status.report(conn, settings, count_memories=count_memories, memory_folder=folder.folder)
        unmade = status.report(conn, settings, count_memories=count_memories, memory_folder=tmp_path / "none")
        uncounted = status.report(conn, settings, memory_folder=folder.folder)
    assert report["memories"] == {"folder": str(folder.folder), "count": 3, "indexed": 2}
    assert unmade["memories"] == {"folder": str(tmp_path / "none"), "count": 0, "indexed": 0}
    assert uncounted["memories"]["count"] is None
    assert set(report) == REPORT_FIELDS | {"memories"}
    assert [root["indexed"] for root in report["roots"]] == [3]  # the readme is indexed, not a memory


def test_a_root_is_watched_while_a_watcher_holds_its_lease_and_not_after(settings, db_url, tmp_path):
    from pgrecall.worker.watch_lease import WatchLease

    notes, other = tmp_path / "notes", tmp_path / "other"
    with database.connect(db_url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO pgrecall.roots (name, path) VALUES ('notes', %s), ('other', %s)", (str(notes), str(other))
        )
        conn.execute(queries.load("service.sql")["set_watch_mode"], {"mode": "events", "path": str(notes)})

    def watched() -> dict:
        with database.connect(db_url) as conn:
            return {root["name"]: root["watched"] for root in status.report(conn, settings)["roots"]}

    async def hold_then_release() -> tuple[dict, dict]:
        lease = WatchLease(db_url, [notes])
        await lease.hold()
        await lease.hold()  # again, as each tick does: one lock
        held = await asyncio.to_thread(watched)
        await lease.release()
        return held, await asyncio.to_thread(watched)

    before = watched()
    held, released = asyncio.run(hold_then_release())
    assert before == {"notes": False, "other": False}
    assert held == {"notes": True, "other": False}
    assert released == {"notes": False, "other": False}


def test_report_counts_documents_per_language_and_says_which_the_model_reads(index, settings, db_url, tmp_path):
    notes = write_notes(
        tmp_path / "notes",
        {
            "en.md": "# Bike\n\nReplace the chain every few thousand kilometres and oil it after rain.",
            "garden.md": "# Garden\n\nTomatoes ripen faster in the sun; water them in the morning.",
            "de.md": "# Heizung\n\nDie Heizkörper im Keller werden jeden Herbst entlüftet, sonst gluckern sie.",
        },
    )
    index(notes)
    with database.connect(db_url) as conn:
        english_only = status.report(conn, settings, model_languages=frozenset({"english"}))["languages"]
        every = status.report(conn, settings)["languages"]
    assert english_only == [
        {"language": "english", "documents": 2, "model_reads": True},
        {"language": "german", "documents": 1, "model_reads": False},
    ]
    assert all(row["model_reads"] for row in every)
