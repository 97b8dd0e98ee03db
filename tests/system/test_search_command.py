"""The read side as processes: `pgrecall search` and `api` on bad or empty databases, read-only rights,
and the Python API's module-level searcher closed at exit."""

import json
import os
import subprocess
import sys

import psycopg
import pytest

from tests.notes import ERROR_CODE_NOTES, TAGGED_NOTES, write_notes
from tests.support.cli import run_cli


@pytest.fixture
def indexed(index, tmp_path):
    root = write_notes(tmp_path / "notes", ERROR_CODE_NOTES)
    index(root)
    return root


@pytest.mark.parametrize("command", [["search", "x"], ["api", "--port", "8799"]])
def test_a_bad_search_url_ends_the_command_with_one_line(tmp_path, command):
    env = dict(os.environ, PGRECALL_HOME=str(tmp_path / "home"), PGRECALL_SEARCH_DATABASE_URL="garbage")
    result = subprocess.run(
        [sys.executable, "-m", "pgrecall.cli", *command], env=env, capture_output=True, text=True, timeout=120
    )
    # The pool used to wait 30 s, then say "pool initialization incomplete": the cause is said instead.
    assert result.returncode == 1
    assert result.stderr.strip() == (
        'pgrecall: error: invalid connection string for the search database: missing "=" after "garbage" '
        "in connection info string"
    )


DEFAULT_SEARCHER_AT_EXIT = """
import atexit
import sys

from pgrecall.api import get_document, search

opened = []
# Registered first, so it runs last: after the module's own exit handler.
atexit.register(lambda: print("closed at exit:", opened[0].pool.closed))
print(search("E-4711", k=1, mode="keyword")[0].path)
print(get_document("notes/garden.md").path)
opened.append(sys.modules["pgrecall.api.searcher"].default_searcher())
"""


def test_the_default_searcher_is_closed_at_exit_without_warnings(indexed, db_url):
    """pgrecall.api.search() and get_document() share a module-level searcher; the
    interpreter's exit closes its pool, with warnings as errors and nothing on stderr."""
    env = dict(os.environ, PGRECALL_DATABASE_URL=db_url, PGRECALL_LOG_FORMAT="json")
    env.pop("PGRECALL_SEARCH_DATABASE_URL", None)
    result = subprocess.run(
        [sys.executable, "-W", "error", "-X", "dev", "-c", DEFAULT_SEARCHER_AT_EXIT],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n") == ["incidents/e4711.md", "notes/garden.md", "closed at exit: True", ""]
    assert result.stderr == ""


def _command(args: list[str], env_extra: dict[str, str], tmp_path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PGRECALL_HOME=str(tmp_path / "home"), PGRECALL_LOG_FORMAT="json", **env_extra)
    env.pop("PGRECALL_SEARCH_DATABASE_URL", None)
    return run_cli(*args, env=env, timeout=120)


@pytest.mark.parametrize("command", [["search", "x"], ["api", "--port", "8798"]])
def test_search_commands_never_migrate_and_say_when_there_is_no_index(empty_db_url, tmp_path, command):
    result = _command(command, {"PGRECALL_DATABASE_URL": empty_db_url}, tmp_path)
    assert result.returncode == 1
    assert result.stderr.strip() == "pgrecall: error: the index is not set up yet: run pgrecall index or serve first"
    with psycopg.connect(empty_db_url) as conn:  # nothing was created: no migration ran
        assert conn.execute("SELECT count(*) FROM pg_namespace WHERE nspname = 'pgrecall'").fetchone()[0] == 0


def test_search_command_needs_no_write_rights(indexed, db_url, tmp_path):
    """Logged in as the reader role itself, which may not migrate (it used to: every search ran the migrator)."""
    reader_url = psycopg.conninfo.make_conninfo(db_url, user="pgrecall_reader")
    result = _command(["search", "E-4711", "-k", "1", "--json"], {"PGRECALL_DATABASE_URL": reader_url}, tmp_path)
    assert result.returncode == 0, result.stderr
    assert [hit["path"] for hit in json.loads(result.stdout)] == ["incidents/e4711.md"]


def test_search_meta_matches_a_front_matter_list(index, cli_env, tmp_path):
    """`--meta tags=incident` finds the note whose front matter says `tags: [incident, database]`."""
    index(write_notes(tmp_path / "tagged", TAGGED_NOTES))
    result = run_cli("search", "replica", "-k", "10", "--meta", "tags=incident", "--json", env=cli_env)
    assert result.returncode == 0, result.stderr
    assert sorted(hit["path"] for hit in json.loads(result.stdout)) == ["disk.md", "failover.md"]


GARLIC_NOTES = {
    f"kitchen/garlic-{n:03}.md": f"# Garlic {n}\n\n"
    + f"Roast garlic number {n} slowly, then spread the garlic on bread for dinner {n}. " * 6
    for n in range(120)
}
SMALLEST_PIPE_BYTES = 4096  # one page: less than what 100 hits print, in text or JSON


@pytest.mark.parametrize("output", [[], ["--json"]], ids=["text", "json"])
def test_a_reader_that_stops_reading_ends_the_search_quietly(index, cli_env, tmp_path, output):
    """`pgrecall search garlic | head -c 10`: the pipe fills, the reader goes, the next write meets a
    closed pipe. The search ends without a word on stderr (no BrokenPipeError traceback)."""
    import fcntl

    index(write_notes(tmp_path / "notes", GARLIC_NOTES))
    read_end, write_end = os.pipe()
    fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, SMALLEST_PIPE_BYTES)
    search = subprocess.Popen(
        [sys.executable, "-m", "pgrecall.cli", "search", "garlic", "-k", "100", *output],
        env=cli_env,
        stdin=subprocess.DEVNULL,
        stdout=write_end,
        stderr=subprocess.PIPE,
        text=True,
    )
    os.close(write_end)
    with os.fdopen(read_end, "rb") as reader:
        first = reader.read(10)  # as head -c 10 does, then it is gone
    stderr = search.communicate(timeout=300)[1]
    assert len(first) == 10
    assert stderr == ""
    assert search.returncode != 0  # the output did not all reach its reader
