"""The CLI as a user runs it: a subprocess, exit codes, one-line errors."""

import json
import os

import pytest

from tests.notes import ERROR_CODE_NOTES, write_notes
from tests.support.cli import cli_env as environment
from tests.support.cli import run_cli as pgrecall

UNREACHABLE = "postgresql://nobody@/nodb?host=/nonexistent"


def test_index_then_search_json(cli_env, tmp_path):
    root = write_notes(tmp_path / "notes", {**ERROR_CODE_NOTES, "junk.bin": b"\x00\x01"})
    indexed = pgrecall("index", str(root), "--json", env=cli_env)
    assert indexed.returncode == 0, indexed.stderr
    summary = json.loads(indexed.stdout)
    assert (summary["indexed"], summary["skipped"], summary["chunks"]) == (4, 1, 4)

    found = pgrecall("search", "E-4711", "-k", "2", "--json", env=cli_env)
    assert found.returncode == 0, found.stderr
    hits = json.loads(found.stdout)
    assert hits[0]["path"] == "incidents/e4711.md"
    assert set(hits[0]) >= {"path", "heading", "text", "score", "ranks"}
    assert set(hits[0]["ranks"]) == {"vector", "keyword"}
    assert hits[0]["ranks"]["keyword"] == 1
    assert hits[0]["arm_scores"]["keyword"] == 1.0  # convex, the default fusion
    by_rank = json.loads(pgrecall("search", "E-4711", "-k", "2", "--fusion", "rrf", "--json", env=cli_env).stdout)
    assert by_rank[0]["path"] == "incidents/e4711.md" and by_rank[0]["arm_scores"] is None

    status = pgrecall("status", "--json", env=cli_env)
    state = json.loads(status.stdout)
    assert (state["documents"], state["chunks"], state["skipped"], state["queue"]["todo"]) == (4, 4, 1, 0)

    failures = pgrecall("failures", env=cli_env)
    assert "junk.bin: [detect] unsupported file type '.bin'" in failures.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["search", "   "], "pgrecall: error: the query is empty"),
        (["search", "x", "-k", "0"], "pgrecall: error: k must be an integer"),
    ],
)
def test_errors_are_one_line_without_traceback(args, message):
    """Refused before any connection: with an unreachable database, the error is still the input's."""
    _assert_one_line(pgrecall(*args, env=environment(UNREACHABLE)), message)


def test_a_missing_folder_to_index_is_one_line(cli_env):
    """index connects to the database before it looks at its paths: this one needs a database."""
    result = pgrecall("index", "/no/such/folder", env=cli_env)
    _assert_one_line(result, "pgrecall: error: no such file or folder: /no/such/folder")


def _assert_one_line(result, message: str) -> None:
    assert result.returncode == 1
    assert result.stderr.strip() == message or result.stderr.strip().startswith(message)
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_unreachable_database_is_one_line(tmp_path):
    env = dict(os.environ, PGRECALL_DATABASE_URL=UNREACHABLE, PGRECALL_HOME=str(tmp_path))
    result = pgrecall("status", env=env)
    assert result.returncode == 1
    assert result.stderr.startswith("pgrecall: error: cannot connect to the database")
    assert len(result.stderr.strip().splitlines()) == 1


def test_help_lists_every_setting_with_examples():
    from pgrecall.settings import ENVIRONMENT_VARIABLES

    result = pgrecall("--help")
    assert result.returncode == 0
    for name in ENVIRONMENT_VARIABLES:
        assert name in result.stdout
    assert "pgrecall search" in result.stdout


def test_embedded_database_starts_on_demand_and_stops(tmp_path):
    env = dict(os.environ, PGRECALL_HOME=str(tmp_path / "home"))
    env.pop("PGRECALL_DATABASE_URL", None)
    url = pgrecall("db", "url", env=env)
    assert url.returncode == 0, url.stderr
    assert str(tmp_path / "home") in url.stdout and "pgrecall" in url.stdout
    migrated = pgrecall("migrate", env=env)
    assert migrated.stdout.startswith("applied: procrastinate-schema, 0001_index.sql")
    assert pgrecall("migrate", env=env).stdout.strip() == "up to date"
    assert pgrecall("db", "stop", env=env).stdout.strip() == "stopped"
    assert pgrecall("db", "stop", env=env).stdout.strip() == "not running"


def test_the_index_summary_and_status_count_failed_and_skipped_files_alike(cli_env, tmp_path):
    """One definition of failed and skipped for both (kinds.SKIPPED_STAGE). Status used to count by
    kind: a .bin whose name cannot be read was 'failed' in the summary and 'skipped' in status, a
    note indexed before that grew past the size limit the other way round; and the summary called
    a failed or skipped file 'unchanged' when its content was as recorded."""
    root = write_notes(
        tmp_path / "notes",
        {
            **ERROR_CODE_NOTES,
            "grows.md": "# Grows\n\nSmall for now.",
            "junk.bin": b"\x00\x01",  # skipped: its type
            "binary.md": b"\x00\x01\x02 not text",  # skipped: not text (and not read again while unchanged)
            "big.md": "# Big\n\n" + "word " * 2000,  # skipped: its size
            "latin1.md": b"caf\xe9 au lait",  # failed: not UTF-8 (and not read again while unchanged)
        },
    )
    env = {**cli_env, "PGRECALL_MAX_FILE_BYTES": "4096"}
    assert pgrecall("index", str(root), "--json", env=env).returncode == 0
    (root / "grows.md").write_text("# Grows\n\n" + "longer now " * 1000)  # skipped now: its size
    (root / os.fsdecode(b"caf\xe9.bin")).write_bytes(b"\x00")  # failed: its name is not UTF-8
    os.symlink("loop.bin", root / "loop.bin")  # failed: a link to itself

    indexed = pgrecall("index", str(root), "--json", env=env)
    assert indexed.returncode == 0, indexed.stderr
    summary = json.loads(indexed.stdout)
    state = json.loads(pgrecall("status", "--json", env=env).stdout)
    assert (summary["failed"], summary["skipped"], summary["unchanged"]) == (3, 4, len(ERROR_CODE_NOTES))
    assert (state["failed"], state["skipped"]) == (summary["failed"], summary["skipped"])
