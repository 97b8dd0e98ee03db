"""A file deleted after `pgrecall index` enqueued it is a removal, not a failure: the run
accounts for it (nothing of it left in the index) and exits 0. A file still there that is
neither indexed nor recorded is still reported."""

from __future__ import annotations

import asyncio
import contextlib

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
