"""Reconciliation: which files of a root are indexed again, and which are dropped."""

from pgrecall.worker.reconciliation import plan


def test_reconciliation_treats_another_chunking_as_a_change():
    from pgrecall.worker.store import FileState

    present = {"a.md": (10, 1.0), "b.md": (20, 2.0)}
    indexed = {
        "a.md": FileState("a.md", 10, 1.0, "h1", "v1/128", other_space=False),
        "b.md": FileState("b.md", 20, 2.0, "h2", "v1/254", other_space=False),
        "c.md": FileState("c.md", 5, 0.5, "h3", "v1/128", other_space=False),
    }
    assert plan(present, indexed, "v1/128") == (["b.md"], ["c.md"])
