"""A file deleted after `pgrecall index` enqueued it is a removal, not a failure: the run
accounts for it (nothing of it left in the index) and exits 0. A file still there that is
neither indexed nor recorded is still reported."""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading

from tests.notes import write_notes
from tests.support.statistics import assert_statistics_consistent, rows

NOTES = 200


def notes(count: int) -> dict[str, str]:
    return {f"n{n:03}.md": f"# Note {n}\n\nShipment {n} reached harbour {n % 7} on day {n}." for n in range(count)}


def after_enqueue(action):
    """A progress factory for run_index: it is called once every job is enqueued and
    before any runs, so `action` happens between the two, every time."""

    @contextlib.contextmanager
    def progress(total: int):
        action()
        yield _Bar()

    return progress


class _Bar:
    def advance(self, outcome) -> None:
        pass


def test_files_deleted_after_they_were_enqueued_are_removals_not_unaccounted(settings, db_url, tmp_path):
    from pgrecall.worker.run import run_index

    root = write_notes(tmp_path / "notes", notes(NOTES))
    deleted = sorted(notes(NOTES))[::2]

    def delete() -> None:
        for path in deleted:
            (root / path).unlink()

    summary = asyncio.run(run_index(settings, db_url, [str(root)], progress=after_enqueue(delete)))

    assert summary.files_enqueued == NOTES
    assert summary.unaccounted == []
    assert summary.statuses == {"indexed": NOTES - len(deleted), "removed": len(deleted)}
    kept = sorted(set(notes(NOTES)) - set(deleted))
    indexed = rows(
        db_url,
        "SELECT path FROM pgrecall.documents WHERE source_root = %s AND chunk_count > 0 AND error IS NULL ORDER BY path",
        (str(root.resolve()),),
    )
    assert [path for (path,) in indexed] == kept  # nothing lost
    assert rows(db_url, "SELECT count(*) FROM pgrecall.documents WHERE path = ANY(%s)", (deleted,)) == [
        (0,)
    ]  # no ghost
    assert_statistics_consistent(db_url)


class DeleteAsTheRunGoes:
    """A progress factory for run_index whose bar hands each outcome to a thread that deletes
    notes of `doomed`: the note of the outcome if it is one (deleted just after it was indexed)
    and the next not yet deleted (deleted before its job reads it, or while). advance() waits for
    the thread, so every deletion happens while the run works, paced by its progress, not by time."""

    def __init__(self, root, doomed: list[str]):
        self.root, self.doomed, self.left = root, set(doomed), list(doomed)
        self.deleted: set[str] = set()
        self.outcomes: queue.Queue = queue.Queue()
        self.handled: queue.Queue = queue.Queue()
        self.thread = threading.Thread(target=self._delete, name="deleter", daemon=True)

    @contextlib.contextmanager
    def progress(self, total: int):
        self.thread.start()
        try:
            yield self
        finally:
            self.outcomes.put(None)
            self.thread.join()

    def advance(self, outcome) -> None:
        if self.thread.is_alive():
            self.outcomes.put(outcome.path)
            self.handled.get(timeout=60)

    def _delete(self) -> None:
        while (path := self.outcomes.get()) is not None:
            for doomed in [path] * (path in self.doomed) + self.left[:1]:
                if doomed not in self.deleted:
                    (self.root / doomed).unlink()
                    self.deleted.add(doomed)
                    self.left.remove(doomed)
            self.handled.put(None)


def test_files_deleted_while_the_run_works_are_gone_from_the_index_when_it_ends(settings, db_url, searcher, tmp_path):
    """200 notes enqueued, 100 deleted while the run works through them: those indexed just before
    they were deleted used to stay searchable until some later run. The run ends with the index
    matching the folder as it is then, and counts each deleted note as one removal."""
    from pgrecall.worker.run import run_index

    root = write_notes(tmp_path / "notes", notes(NOTES))
    doomed = sorted(notes(NOTES))[1::2]
    deleter = DeleteAsTheRunGoes(root, doomed)

    summary = asyncio.run(run_index(settings, db_url, [str(root)], progress=deleter.progress))

    assert deleter.deleted == set(doomed)
    assert not any((root / path).exists() for path in doomed)
    assert summary.unaccounted == []
    assert summary.statuses["removed"] == len(doomed)
    kept = sorted(set(notes(NOTES)) - set(doomed))
    documents = rows(db_url, "SELECT path FROM pgrecall.documents WHERE source_root = %s ORDER BY path", (str(root),))
    assert [path for (path,) in documents] == kept
    found = {hit.path for hit in searcher.search("shipment harbour", k=1000, mode="keyword")}
    assert found == set(kept)
    assert_statistics_consistent(db_url)


def test_a_file_still_there_but_neither_indexed_nor_recorded_is_unaccounted(settings, db_url, tmp_path):
    """Its job is lost before it runs (the bug `unaccounted` is for); the deleted file beside it is not one."""
    from pgrecall.worker.run import run_index

    root = write_notes(tmp_path / "notes", notes(3))

    def lose_a_job_and_delete_a_file() -> None:
        rows(db_url, "DELETE FROM procrastinate_jobs WHERE args->>'path' = 'n001.md' RETURNING id")
        (root / "n002.md").unlink()

    summary = asyncio.run(
        run_index(settings, db_url, [str(root)], progress=after_enqueue(lose_a_job_and_delete_a_file))
    )

    assert summary.unaccounted == [f"{root.resolve()}/n001.md"]
    assert summary.statuses == {"indexed": 1, "removed": 1}
