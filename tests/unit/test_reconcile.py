"""Reconciliation: which files of a root are indexed again, and which are dropped."""

from pgrecall.worker.reconcile import plan


def test_reconciliation_treats_another_chunking_as_a_change():
    from pgrecall.worker.store import FileState

    present = {"a.md": (10, 1.0), "b.md": (20, 2.0)}
    indexed = {
        "a.md": FileState("a.md", 10, 1.0, "h1", "v1/128", other_space=False),
        "b.md": FileState("b.md", 20, 2.0, "h2", "v1/254", other_space=False),
        "c.md": FileState("c.md", 5, 0.5, "h3", "v1/128", other_space=False),
    }
    assert plan(present, indexed, "v1/128") == (["b.md"], ["c.md"])


def test_a_file_modified_within_moments_of_its_indexing_is_looked_at_again():
    import datetime

    from pgrecall.worker.store import RACY, FileState

    indexed_at = datetime.datetime(2026, 12, 1, 12, 0, tzinfo=datetime.UTC)
    settled = indexed_at - RACY - datetime.timedelta(milliseconds=1)
    racy = indexed_at - RACY + datetime.timedelta(milliseconds=1)
    present = {"settled.md": (10, settled), "racy.md": (10, racy), "unknown.md": (10, racy)}
    indexed = {
        "settled.md": FileState("settled.md", 10, settled, "h1", "v1", other_space=False, indexed_at=indexed_at),
        "racy.md": FileState("racy.md", 10, racy, "h2", "v1", other_space=False, indexed_at=indexed_at),
        "unknown.md": FileState("unknown.md", 10, racy, "h3", "v1", other_space=False, indexed_at=None),
    }
    assert plan(present, indexed, "v1") == (["racy.md"], [])
