"""Archive roots (worker/archive.py): what the source deletes stays indexed, from a private copy.

Real queue, workers, database and model: `pgrecall index` (run_index) on a folder of Claude
Code sessions registered as an archive root, as `serve` registers a root with `archive = true`.
"""

from __future__ import annotations

import shutil
import stat
from pathlib import Path

import psycopg
import pytest

from pgrecall import status
from pgrecall.postgres import queries
from pgrecall.settings import load_settings

FIXTURES = Path(__file__).parent.parent / "fixtures" / "claude_code"
CARROTS = "5e8f1a2b-0c3d-4e5f-8a9b-1c2d3e4f5a6b.jsonl"
VACUUM = "7b3e2c1a-5d4f-4e8a-9c6b-2f1e0d9c8b7a.jsonl"
SUBAGENT = "7b3e2c1a-5d4f-4e8a-9c6b-2f1e0d9c8b7a/subagents/agent-a3f9c21.jsonl"


@pytest.fixture
def projects(tmp_path):
    """A ~/.claude/projects folder: two projects' sessions, one with a subagent's transcript,
    and a .jsonl file that is not a session."""
    root = tmp_path / "projects"
    shutil.copytree(FIXTURES, root / "-home-ada-src-shop")
    (root / "-home-ada-src-shop" / "metrics.jsonl").write_text('{"cpu": 0.4}\n{"cpu": 0.5}\n')
    return root.resolve()


def register_archive_root(db_url: str, root: Path, folder: Path) -> None:
    with psycopg.connect(db_url, autocommit=True) as conn:
        sql = queries.load("index.sql")["upsert_root"]
        conn.execute(sql, {"name": "claude-code", "path": str(root), "archive_folder": str(folder)})


def documents(db_url: str, root: Path) -> dict[str, dict]:
    with psycopg.connect(db_url) as conn:
        rows = conn.execute(
            "SELECT path, metadata FROM pgrecall.documents WHERE source_root = %s AND error IS NULL", (str(root),)
        ).fetchall()
    return dict(rows)


def test_a_session_deleted_at_the_source_stays_searchable_until_its_copy_is_deleted(
    projects, settings, db_url, index, searcher
):
    archive = settings.home / "archive" / "claude-code"
    register_archive_root(db_url, projects, archive)
    project = "-home-ada-src-shop"

    first = index(projects)
    assert first.statuses["indexed"] == 3 and first.statuses["skipped"] == 1  # metrics.jsonl: not a session
    for relative in (CARROTS, VACUUM, SUBAGENT):
        copy = archive / project / relative
        assert copy.read_bytes() == (projects / project / relative).read_bytes()
        assert stat.S_IMODE(copy.stat().st_mode) == 0o600
    assert not (archive / project / "metrics.jsonl").exists()  # only what is indexed is kept
    for folder in (archive, archive / project, (archive / project / SUBAGENT).parent):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700

    (projects / project / CARROTS).unlink()  # Claude Code's cleanup
    shutil.rmtree(projects / project / VACUUM.removesuffix(".jsonl"))  # the subagent's folder
    second = index(projects)
    assert second.statuses["archived"] == 2 and second.unaccounted == []
    kept = documents(db_url, projects)
    assert kept[f"{project}/{CARROTS}"]["archive_copy"] == str(archive / project / CARROTS)
    assert kept[f"{project}/{CARROTS}"]["archived_at"].endswith("Z")
    assert "archived_at" not in kept[f"{project}/{VACUUM}"]  # still at its source

    hits = searcher.search("how deep must a raised bed be for carrots", k=3)
    assert hits[0].path == f"{project}/{CARROTS}"
    assert hits[0].metadata["archived_at"]
    document = searcher.get_document(f"{project}/{CARROTS}")
    assert document is not None and document.metadata["archive_copy"] == str(archive / project / CARROTS)
    with psycopg.connect(db_url) as conn:
        (root_status,) = [r for r in status.report(conn, settings)["roots"] if r["path"] == str(projects)]
    assert root_status["archived"] == 2 and root_status["archive_folder"] == str(archive)

    third = index(projects)  # archived files are not the folder's: nothing to do
    assert third.statuses.get("removed", 0) == 0 and third.statuses.get("archived", 0) == 0

    (archive / project / CARROTS).unlink()  # deleting in the archive itself does remove it
    fourth = index(projects)
    assert fourth.statuses["removed"] == 1
    assert f"{project}/{CARROTS}" not in documents(db_url, projects)
    assert f"{project}/{SUBAGENT}" in documents(db_url, projects)
    assert all(hit.path != f"{project}/{CARROTS}" for hit in searcher.search("raised bed carrots", k=10))


def test_a_session_back_at_its_source_is_no_longer_archived(projects, settings, db_url, index):
    archive = settings.home / "archive" / "claude-code"
    register_archive_root(db_url, projects, archive)
    session = projects / "-home-ada-src-shop" / CARROTS
    content = session.read_bytes()
    index(projects)
    session.unlink()
    index(projects)
    assert "archived_at" in documents(db_url, projects)[f"-home-ada-src-shop/{CARROTS}"]
    session.write_bytes(content)  # restored from a backup: unchanged content, read again
    assert "indexed" not in index(projects).statuses
    assert "archived_at" not in documents(db_url, projects)[f"-home-ada-src-shop/{CARROTS}"]


def test_a_root_that_is_no_archive_removes_deleted_sessions(projects, settings, db_url, index):
    index(projects)
    (projects / "-home-ada-src-shop" / CARROTS).unlink()
    assert index(projects).statuses["removed"] == 1
    assert not (settings.home / "archive").exists()


@pytest.mark.parametrize("setting, found", [("off", False), ("on", True)])
def test_tool_results_are_indexed_only_when_the_setting_says_so(projects, db_url, tmp_path, setting, found):
    import asyncio

    from pgrecall.worker.run import run_index

    settings = load_settings({"PGRECALL_HOME": str(tmp_path / "home"), "PGRECALL_SESSION_TOOL_RESULTS": setting})
    asyncio.run(run_index(settings, db_url, [str(projects)]))
    with psycopg.connect(db_url) as conn:
        text = " ".join(
            row[0]
            for row in conn.execute(
                "SELECT c.text FROM pgrecall.chunks c JOIN pgrecall.documents d ON d.id = c.document_id"
                " WHERE d.path = %s",
                (f"-home-ada-src-shop/{CARROTS}",),
            )
        )
    assert "How deep must a raised bed be" in text
    assert ("30 cm of loose soil" in text) is found  # the Task tool's result


def test_a_subagents_transcript_is_found_under_its_parent_sessions_id(projects, index, searcher):
    index(projects)
    session_id = VACUUM.removesuffix(".jsonl")
    hits = searcher.search("dead tuples vacuum", k=10, filters={"metadata": {"session_id": session_id}})
    paths = {hit.path for hit in hits}
    assert paths == {f"-home-ada-src-shop/{VACUUM}", f"-home-ada-src-shop/{SUBAGENT}"}
    subagent = next(hit for hit in hits if hit.path.endswith(SUBAGENT))  # hits are chunks
    assert subagent.metadata["parent_session_id"] == session_id and subagent.metadata["agent_id"] == "a3f9c21"
