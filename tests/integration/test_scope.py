"""Project scope and time on a real index: the project filter and boost (E-4711 in another
project), since/before on the documents' own times, recent, a root's project from the config,
and migration 0020 on an index written before it."""

from __future__ import annotations

import asyncio
import datetime
import json
import os
import shutil
from pathlib import Path

import psycopg
import pytest

from pgrecall import contract
from pgrecall.memory.request import remember_request
from pgrecall.postgres import database
from pgrecall.postgres.migrator import bundled_migrations, migrate
from pgrecall.worker import store
from pgrecall.worker.memory.writer import MemoryService
from tests.notes import conversation, write_export, write_notes

A, B = "/work/apollo", "/work/borealis"  # no such folders: kept as the resolved paths
SESSION = Path(__file__).parents[1] / "fixtures" / "claude_code" / "7b3e2c1a-5d4f-4e8a-9c6b-2f1e0d9c8b7a.jsonl"
UTC = datetime.UTC


def _note(project: str | None, body: str, created: str | None = None) -> str:
    front = "".join(
        f"{key}: '{value}'\n" for key, value in (("project", project), ("created", created)) if value is not None
    )
    return f"---\n{front}---\n\n{body}\n" if front else f"{body}\n"


PROJECT_NOTES = {
    "a/e4712.md": _note(
        A, "# Incident report\n\nThe export job failed with error code E-4712 after storage throttled reads."
    ),
    "a/deploy.md": _note(A, "# Deploys\n\nApollo deploys go out on Tuesdays."),
    "b/e4711.md": _note(
        B, "# Incident report\n\nThe export job failed with error code E-4711 after storage throttled reads."
    ),
    "b/garden.md": _note(B, "# Garden\n\nTomatoes ripen faster on the south bed."),
    "global.md": _note(None, "# Preferences\n\nThe user prefers short answers with code first."),
}


@pytest.fixture
def projects(index, tmp_path):
    root = write_notes(tmp_path / "notes", PROJECT_NOTES)
    index(root)
    return root


@pytest.mark.parametrize("fusion", ["convex", "rrf"])
def test_an_identifier_only_another_project_holds_stays_first(projects, searcher, fusion):
    hits = searcher.search("E-4711", k=5, fusion=fusion, project=A)
    assert hits[0].path == "b/e4711.md" and hits[0].project == B
    assert hits[1].path == "a/e4712.md"  # its near-twin of the project searched from, next


def test_the_project_searched_from_ranks_first_at_equal_relevance(projects, searcher):
    query = "why did the export job fail after storage throttled reads"
    from_a = searcher.search(query, k=2, project=A)
    from_b = searcher.search(query, k=2, project=B)
    assert [h.path for h in from_a] == ["a/e4712.md", "b/e4711.md"]
    assert [h.path for h in from_b] == ["b/e4711.md", "a/e4712.md"]
    # The boost is the only difference: the same passage scores 1.1 times its unboosted score.
    plain = {h.path: h.score for h in searcher.search(query, k=2)}
    assert from_a[0].score == pytest.approx(plain["a/e4712.md"] * 1.1)
    assert from_a[1].score == pytest.approx(plain["b/e4711.md"])


def test_global_documents_and_other_projects_stay_eligible_under_the_boost(projects, searcher):
    hits = searcher.search("does the user like short answers", k=1, project=A)
    assert hits[0].path == "global.md" and hits[0].project is None
    assert searcher.search("tomatoes on the south bed", k=1, project=A)[0].path == "b/garden.md"


def test_the_project_filter_keeps_only_that_project(projects, searcher):
    hits = searcher.search("E-4711", k=10, filters={"project": A})
    assert hits and {h.project for h in hits} == {A}
    assert "b/e4711.md" not in {h.path for h in hits}
    assert searcher.search("E-4711", k=10, filters={"project": "/work/nothing"}) == []


def test_without_a_project_nothing_reads_the_facts_and_the_order_is_unchanged(projects, searcher):
    """No project, no exact tie: the ranking is the fusion's alone (SciFact's numbers cannot move)."""
    query = "export job failure"
    assert [h.chunk_id for h in searcher.search(query, k=5)] == [
        h.chunk_id for h in searcher.search(query, k=5, project=None)
    ]


@pytest.fixture
def timed(index, tmp_path):
    """Documents whose own times are known: notes with `created`, a note without (its mtime),
    a Claude Code session and a claude.ai conversation."""
    root = write_notes(
        tmp_path / "timed",
        {
            "old.md": _note(None, "# Budget\n\nThe budget review chose the vendor.", created="2025-01-10T09:00:00Z"),
            "new.md": _note(None, "# Budget\n\nThe budget review moved to Thursdays.", created="2026-11-25T09:00:00Z"),
            "plain.md": "# Plain\n\nA note that names no time of its own.",
        },
    )
    plain_mtime = datetime.datetime(2024, 5, 5, 12, tzinfo=UTC).timestamp()
    os.utime(root / "plain.md", (plain_mtime, plain_mtime))
    (root / "sessions").mkdir()
    shutil.copy(SESSION, root / "sessions" / SESSION.name)  # last message 2026-06-15T10:50:00Z
    chat = conversation("c1", "Launch plan", [("human", "When do we launch?"), ("assistant", "On Tuesday.")])
    write_export(root / "claude" / "conversations.json", [chat])  # last message 2025-03-01T10:01:00Z
    index(root)
    return root


def _found(searcher, **filters) -> set[str]:
    hits = searcher.search("notes", k=100, mode="vector", filters=filters)
    return {hit.path.split("#")[0] for hit in hits}


def test_since_and_before_filter_on_the_documents_own_times(timed, searcher):
    conv, session = "claude/conversations.json", f"sessions/{SESSION.name}"
    assert _found(searcher) == {"old.md", "new.md", "plain.md", conv, session}
    assert _found(searcher, since="2026-01-01") == {"new.md", session}
    assert _found(searcher, before="2025-06-01") == {"old.md", "plain.md", conv}
    assert _found(searcher, since="2025-02-01", before="2026-07-01") == {conv, session}
    assert _found(searcher, since="2026-06-15T10:50:00Z") == {"new.md", session}  # since is inclusive
    assert _found(searcher, before="2026-06-15T10:50:00Z") == {"old.md", "plain.md", conv}  # before is not
    times = {h.path.split("#")[0]: h.occurred_at for h in searcher.search("budget", k=100, mode="vector")}
    assert times["plain.md"] == datetime.datetime(2024, 5, 5, 12, tzinfo=UTC)
    assert times[conv] == datetime.datetime(2025, 3, 1, 10, 1, tzinfo=UTC)
    # modified_since still reads the files' modification times: every file but plain.md is new.
    assert "plain.md" not in _found(searcher, modified_since="2025-01-01") and "old.md" in _found(
        searcher, modified_since="2025-01-01"
    )


def test_recent_lists_by_own_time_newest_first(timed, searcher):
    request = contract.recent_request(since="2025-02-01T00:00:00Z")
    listed = [(d.path.split("#")[0], d.occurred_at) for d in searcher.recent(request)]
    assert listed == [
        ("new.md", datetime.datetime(2026, 11, 25, 9, tzinfo=UTC)),
        (f"sessions/{SESSION.name}", datetime.datetime(2026, 6, 15, 10, 50, tzinfo=UTC)),
        ("claude/conversations.json", datetime.datetime(2025, 3, 1, 10, 1, tzinfo=UTC)),
    ]
    kinds_only = searcher.recent(contract.recent_request(since="2020-01-01", kind="claude_code_session"))
    assert [d.kind for d in kinds_only] == ["claude_code_session"]
    assert kinds_only[0].project == "/home/ada/src/shop"


def test_a_memory_carries_its_project_and_its_creation_time(settings, db_url, searcher, tmp_path):
    repo = tmp_path / "apollo"
    (repo / ".git").mkdir(parents=True)
    (repo / "api").mkdir()

    async def remember():
        async with MemoryService(settings, db_url, tmp_path / "memories") as service:
            here = contract.with_project(None, str(repo / "api"))
            return await service.remember(
                remember_request("Apollo releases are cut from the main branch on Mondays.", metadata=here)
            )

    saved = asyncio.run(remember())
    assert saved.memory.metadata["project"] == str(repo.resolve())
    hits = searcher.search("when are releases cut", k=1, filters={"project": str(repo / "api")})
    assert hits[0].metadata["id"] == saved.memory.id and hits[0].project == str(repo.resolve())
    created = datetime.datetime.fromisoformat(saved.memory.created)
    assert hits[0].occurred_at == created
    (recent,) = searcher.recent(contract.recent_request(project=str(repo)))
    assert (recent.memory_id, recent.occurred_at) == (saved.memory.id, created)


def test_a_root_s_project_from_the_config_is_its_documents_unless_they_name_one(index, db_url, searcher, tmp_path):
    root = write_notes(tmp_path / "docs", {"plain.md": "# Plain\n\nRunbook.", "own.md": _note(B, "# Own\n\nRunbook.")})

    async def register(project):
        async with await psycopg.AsyncConnection.connect(db_url, autocommit=True) as conn:
            await store.upsert_root(conn, "docs", str(root.resolve()), None, project)

    def projects():
        return {h.path: h.project for h in searcher.search("runbook", k=10, mode="keyword")}

    asyncio.run(register(A))
    index(root)
    assert projects() == {"plain.md": A, "own.md": B}
    asyncio.run(register("renamed"))  # the config changed: no file did
    assert projects() == {"plain.md": "renamed", "own.md": B}
    asyncio.run(register(None))
    assert projects() == {"plain.md": None, "own.md": B}


def test_migration_0020_fills_project_and_own_time_on_an_existing_index(empty_db_url):
    before = [m for m in bundled_migrations() if m.name < "0020"]
    mtime = datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)
    rows = [
        ("memory.md", "markdown", {"id": "0123456789ab", "created": "2026-11-30T10:00:00Z", "project": "/p/a"}),
        ("bad.md", "markdown", {"created": "the day after"}),
        ("s.jsonl", "claude_code_session", {"project": "/home/ada/shop", "last_timestamp": "2026-06-15T10:50:00.000Z"}),
        ("c.json#1", "claude_conversation", {"updated_at": "2025-03-01T11:00:00Z", "project": "Apollo"}),
        ("n.txt", "text", {"project": 7}),
    ]
    with database.connect(empty_db_url) as conn:
        migrate(conn, before, provision_reader=False)
        for path, kind, metadata in rows:
            conn.execute(
                "INSERT INTO pgrecall.documents (source_root, path, kind, mtime, metadata) VALUES ('/r', %s, %s, %s, %s)",
                (path, kind, mtime, json.dumps(metadata)),
            )
        conn.commit()
        migrate(conn, provision_reader=False)
        found = dict(
            (path, (project, occurred))
            for path, project, occurred in conn.execute("SELECT path, project, occurred_at FROM pgrecall.documents")
        )
    assert found == {
        "memory.md": ("/p/a", datetime.datetime(2026, 11, 30, 10, tzinfo=UTC)),
        "bad.md": (None, mtime),
        "s.jsonl": ("/home/ada/shop", datetime.datetime(2026, 6, 15, 10, 50, tzinfo=UTC)),
        "c.json#1": ("Apollo", datetime.datetime(2025, 3, 1, 11, tzinfo=UTC)),
        "n.txt": (None, mtime),
    }


def test_a_note_naming_the_project_by_name_ranks_first_for_a_search_from_its_folder(index, searcher, tmp_path):
    """Issue 42: `project: apollo` in front matter and a session started in /work/apollo are one project."""
    notes = {
        "named.md": _note("apollo", "# Incident report\n\nThe export job failed after storage throttled reads."),
        "other.md": _note(B, "# Incident report\n\nThe export job failed after storage throttled reads."),
    }
    index(write_notes(tmp_path / "named", notes))
    query = "why did the export job fail after storage throttled reads"
    assert searcher.search(query, k=2, project=A)[0].path == "named.md"
    assert searcher.search(query, k=2, project=B)[0].path == "other.md"
