"""Least privilege for real: the search side logs in as pgrecall_reader, which cannot write, and writes nothing.

A connection that logged in as the superuser and only ran SET ROLE can take its
rights back; these tests try exactly that on the connections searches use. The
reader's password is the migrating side's business (pgrecall.postgres.reader_login): a
search process only reads the stored login, which these tests check on the
server's transaction counter and in the search side's SQL.
"""

from __future__ import annotations

import ast
import concurrent.futures
import re
import shutil
import tempfile
from pathlib import Path

import psycopg
import pytest
import structlog
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from pgrecall.api import reader
from pgrecall.api.searcher import Searcher
from pgrecall.postgres import database, queries
from pgrecall.postgres.migrator import migrate
from pgrecall.settings import load_settings
from tests.notes import ERROR_CODE_NOTES, write_notes

ESCAPES = [
    "SET TRANSACTION READ WRITE; RESET ROLE; INSERT INTO pgrecall.roots (name, path) VALUES ('x', '/x')",
    "SET TRANSACTION READ WRITE; SET SESSION AUTHORIZATION postgres; INSERT INTO pgrecall.roots (name, path) VALUES ('x', '/x')",
    "SET TRANSACTION READ WRITE; SET ROLE postgres; INSERT INTO pgrecall.roots (name, path) VALUES ('x', '/x')",
    "SET TRANSACTION READ WRITE; RESET ROLE; DELETE FROM pgrecall.chunks",
    "SET TRANSACTION READ WRITE; RESET ROLE; SELECT count(*) FROM pgrecall.reader_login",
]


@pytest.fixture
def reader_searcher(settings, db_url, embedder, index, tmp_path):
    index(write_notes(tmp_path / "notes", ERROR_CODE_NOTES))
    searcher = Searcher(reader.search_login(settings, db_url), settings, embedder=embedder, pool_size=1)
    yield searcher
    searcher.close()


def _attempt(conn: psycopg.Connection, statements: str) -> None:
    try:
        for statement in statements.split("; "):
            conn.execute(statement)
    finally:
        conn.rollback()


def test_search_logs_in_as_the_reader_and_still_finds(reader_searcher):
    with reader_searcher.pool.connection() as conn:
        assert conn.execute("SELECT session_user, current_user").fetchone() == ("pgrecall_reader", "pgrecall_reader")
        conn.rollback()
    assert reader_searcher.search("E-4711", k=1)[0].path == "incidents/e4711.md"
    assert reader_searcher.get_document("incidents/e4711.md") is not None
    assert reader_searcher.health()["documents"] == 4


@pytest.mark.parametrize("statements", ESCAPES)
def test_the_reader_login_cannot_take_rights_back(reader_searcher, db_url, statements):
    with reader_searcher.pool.connection() as conn, pytest.raises(psycopg.errors.InsufficientPrivilege):
        _attempt(conn, statements)
    with psycopg.connect(db_url) as conn:
        assert conn.execute("SELECT count(*) FROM pgrecall.roots").fetchone()[0] == 0


def test_set_role_alone_could_take_them_back(settings, db_url, embedder):
    """Why the login matters: the fallback's SET ROLE connection undoes it (the hole the reader login closes)."""
    fallback = Searcher(db_url, settings, embedder=embedder, pool_size=1)
    try:
        with fallback.pool.connection() as conn:
            assert conn.execute("SELECT session_user, current_user").fetchone() == ("postgres", "pgrecall_reader")
            conn.rollback()
            _attempt(conn, ESCAPES[0])  # no error: RESET ROLE gave the superuser back
    finally:
        fallback.close()


def test_search_database_url_is_used_as_given(db_url, tmp_path):
    settings = load_settings({"PGRECALL_HOME": str(tmp_path), "PGRECALL_SEARCH_DATABASE_URL": db_url})
    assert reader.search_login(settings, "postgresql://elsewhere/pgrecall") == db_url


# An embedded server of this module's own, which asks pgrecall_reader for a
# password on its socket (the session's trusts everyone): the external-server path.
# Autovacuum is off there, so that nothing but the tests takes a transaction id (_next_xid).


@pytest.fixture(scope="module")
def password_server():
    home = Path(tempfile.mkdtemp(prefix="pgrecall-password-"))
    settings = load_settings({"PGRECALL_HOME": str(home)})
    try:
        url = database.start_embedded(settings)
        hba = database.pgdata_path(settings) / "pg_hba.conf"
        hba.write_text("local all pgrecall_reader scram-sha-256\n" + hba.read_text())
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("ALTER SYSTEM SET autovacuum = off")
            conn.execute("SELECT pg_reload_conf()")
        with database.connect(url) as conn:
            migrate(conn)
        yield url
    finally:
        database.stop_embedded(settings)
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture
def fresh_password(password_server):
    """No stored password, and none the reader could log in with: a server no migration has provisioned."""
    with psycopg.connect(password_server, autocommit=True) as conn:
        conn.execute("DELETE FROM pgrecall.reader_login")
        conn.execute("ALTER ROLE pgrecall_reader LOGIN PASSWORD NULL")
    return password_server


@pytest.fixture
def provisioned(fresh_password):
    """The reader's login as a migration leaves it."""
    _migrate(fresh_password)
    return fresh_password


def _migrate(url: str, **options: bool) -> None:
    with database.connect(url) as conn:
        migrate(conn, **options)


def _reader(url: str, **params: str) -> psycopg.Connection:
    return psycopg.connect(make_conninfo(url, user="pgrecall_reader", **params))


def _login_state(url: str) -> tuple:
    """The stored login (password, when set) and the reader role's verifier: what a search must never change."""
    with psycopg.connect(url) as conn:
        stored = conn.execute("SELECT password, set_at FROM pgrecall.reader_login").fetchall()
        role = conn.execute(
            "SELECT rolcanlogin, rolpassword FROM pg_authid WHERE rolname = 'pgrecall_reader'"
        ).fetchone()
    return stored, role


def _next_xid(url: str) -> int:
    """The server's next transaction id: any row or catalog written on any connection since takes one
    (reads never do), whether its transaction committed or not."""
    with psycopg.connect(url, autocommit=True) as conn:
        return int(conn.execute("SELECT pg_snapshot_xmax(pg_current_snapshot())::text").fetchone()[0])


def test_the_server_really_asks_the_reader_for_a_password(fresh_password):
    with pytest.raises(psycopg.OperationalError):
        _reader(fresh_password).close()


def test_migrate_sets_a_password_that_searches_use(provisioned, tmp_path):
    settings = load_settings({"PGRECALL_HOME": str(tmp_path)})
    ([(stored, _set_at)], (can_log_in, verifier)) = state = _login_state(provisioned)
    assert can_log_in and verifier.startswith("SCRAM-SHA-256$") and stored not in verifier
    url = reader.search_login(settings, provisioned)
    assert (conninfo_to_dict(url)["user"], conninfo_to_dict(url)["password"]) == ("pgrecall_reader", stored)
    with _reader(provisioned, password=stored) as conn, pytest.raises(psycopg.errors.InsufficientPrivilege):
        _attempt(conn, ESCAPES[0])
    with pytest.raises(psycopg.OperationalError):
        _reader(provisioned, password="wrong").close()
    # A later migration keeps a password that works: a long-running search elsewhere keeps logging in.
    _migrate(provisioned)
    assert _login_state(provisioned) == state
    assert reader.search_login(settings, provisioned) == url


@pytest.mark.parametrize("stored_login", ["accepted", "refused"])
def test_a_search_writes_nothing(provisioned, tmp_path, embedder, stored_login):
    """Not one transaction id taken on the server while a search process logs in and searches, whether the
    stored password works or not (searches once renewed a refused one: ALTER ROLE and INSERT)."""
    settings = load_settings({"PGRECALL_HOME": str(tmp_path)})
    if stored_login == "refused":
        with psycopg.connect(provisioned, autocommit=True) as conn:
            conn.execute("ALTER ROLE pgrecall_reader PASSWORD 'changed-behind-its-back'")
    state, xid = _login_state(provisioned), _next_xid(provisioned)
    with structlog.testing.capture_logs() as logs:
        url = reader.search_login(settings, provisioned)
    searcher = Searcher(url, settings, embedder=embedder, pool_size=1)
    try:
        assert searcher.search("E-4711 timeout", k=3) == []
        assert searcher.get_document("incidents/e4711.md") is None
        assert searcher.health()["documents"] == 0
    finally:
        searcher.close()
    assert _next_xid(provisioned) == xid
    assert _login_state(provisioned) == state
    warnings = [entry for entry in logs if entry["log_level"] == "warning"]
    if stored_login == "accepted":
        assert conninfo_to_dict(url)["user"] == "pgrecall_reader" and warnings == []
    else:
        assert url == provisioned
        assert [w["event"] for w in warnings] == ["search_login_fallback"]
        assert "with the stored password" in warnings[0]["reason"]
        assert "run pgrecall migrate" in warnings[0]["reason"]


def test_migrate_replaces_a_refused_password(provisioned, tmp_path):
    settings = load_settings({"PGRECALL_HOME": str(tmp_path)})
    first = _login_state(provisioned)[0][0][0]
    with psycopg.connect(provisioned, autocommit=True) as conn:
        conn.execute("ALTER ROLE pgrecall_reader PASSWORD 'changed-behind-its-back'")
    stale = _login_state(provisioned)
    _migrate(provisioned, provision_reader=False)  # an eval's scratch database: the login is left alone
    assert _login_state(provisioned) == stale
    with structlog.testing.capture_logs() as logs:
        _migrate(provisioned)
    assert [entry["event"] for entry in logs if entry["event"].startswith("reader_")] == ["reader_password_set"]
    url = reader.search_login(settings, provisioned)
    assert conninfo_to_dict(url)["password"] not in (first, "changed-behind-its-back")
    assert conninfo_to_dict(url)["password"] == _login_state(provisioned)[0][0][0]
    psycopg.connect(url).close()


def test_migrators_starting_together_agree_on_one_password(fresh_password, tmp_path):
    settings = load_settings({"PGRECALL_HOME": str(tmp_path)})
    with structlog.testing.capture_logs() as logs, concurrent.futures.ThreadPoolExecutor(6) as pool:
        list(pool.map(lambda _: _migrate(fresh_password), range(6)))
    assert [entry["event"] for entry in logs].count("reader_password_set") == 1
    url = reader.search_login(settings, fresh_password)
    assert conninfo_to_dict(url)["user"] == "pgrecall_reader"
    psycopg.connect(url).close()


def test_without_a_reader_login_searches_fall_back_with_one_warning(fresh_password, tmp_path, embedder):
    settings = load_settings({"PGRECALL_HOME": str(tmp_path)})
    with psycopg.connect(fresh_password, autocommit=True) as conn:
        conn.execute("ALTER ROLE pgrecall_reader NOLOGIN")
    try:
        with structlog.testing.capture_logs() as logs:
            url = reader.search_login(settings, fresh_password)
        assert url == fresh_password
        warnings = [entry for entry in logs if entry["log_level"] == "warning"]
        assert [w["event"] for w in warnings] == ["search_login_fallback"]
        assert "may not log in" in warnings[0]["reason"]
        searcher = Searcher(url, settings, embedder=embedder, pool_size=1)
        try:
            with searcher.pool.connection() as conn:
                assert conn.execute("SELECT current_user").fetchone()[0] == "pgrecall_reader"
                conn.rollback()
                with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
                    conn.execute("INSERT INTO pgrecall.roots (name, path) VALUES ('x', '/x')")
        finally:
            searcher.close()
    finally:
        with psycopg.connect(fresh_password, autocommit=True) as conn:
            conn.execute("ALTER ROLE pgrecall_reader LOGIN")


# The search side's SQL, read as text: only reads. (Its .sql files and the statements its modules spell out.)

ROOT = Path(__file__).resolve().parents[2]
WRITES = re.compile(
    r"\b(INSERT|UPDATE|DELETE|MERGE|TRUNCATE|COPY|ALTER|CREATE|DROP|GRANT|REVOKE|COMMENT|SECURITY|VACUUM|ANALYZE"
    r"|REINDEX|CLUSTER|REFRESH|CALL|DO|LOCK|NOTIFY|IMPORT|REASSIGN|nextval|setval|lo_\w+)\b",
    re.IGNORECASE,
)
# EXPLAIN plans and runs nothing (EXPLAIN ANALYZE would run its statement: ANALYZE is among WRITES).
READS = ("SELECT", "WITH", "SET", "SHOW", "EXPLAIN")
SEARCH_SIDE_SQL = ["search.sql", "status.sql"]  # status.sql: the health a search reports
SEARCH_SIDE_SOURCES = [*sorted((ROOT / "api").glob("*.py")), ROOT / "pgrecall" / "postgres" / "reader_role.py"]


def _code(statement: str) -> str:
    """The statement without its comments and string literals (a word in those writes nothing)."""
    return re.sub(r"'(?:[^']|'')*'", "''", re.sub(r"--[^\n]*", "", statement)).strip()


def _write_problems(where: str, statement: str, fragment: bool = False) -> list[str]:
    code = _code(statement)
    problems = [f"{where}: {word!r}" for word in WRITES.findall(code)]
    if not fragment and not code.upper().startswith(READS):
        problems.append(f"{where}: starts with {code.split()[0]!r}, not one of {READS}")
    return problems


@pytest.mark.parametrize("filename", SEARCH_SIDE_SQL)
def test_the_search_sides_queries_only_read(filename):
    named = queries.load(filename)
    fragments = {name for name in named if any("{" + name + "}" in body for body in named.values())}
    problems = [
        p for name, body in named.items() for p in _write_problems(f"{filename} {name}", body, name in fragments)
    ]
    assert named and not problems, problems


def test_the_statements_the_search_side_spells_out_only_read():
    problems, seen = [], 0
    for path in SEARCH_SIDE_SOURCES:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (
                isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "execute"
            ):
                continue
            if node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                seen += 1
                problems += _write_problems(f"{path.relative_to(ROOT)}:{node.lineno}", node.args[0].value)
    assert seen and not problems, problems


def test_the_write_check_sees_writes():
    """The checks above would fail on what searches once ran."""
    old = [
        "ALTER ROLE pgrecall_reader PASSWORD {verifier}",
        "INSERT INTO pgrecall.reader_login VALUES (true, %s)",
    ]
    assert all(_write_problems("old", statement) for statement in old)
    assert not _write_problems("comment", "SELECT 1 -- never UPDATE here\n, 'DROP'")
    assert _write_problems("row lock", "SELECT id FROM pgrecall.documents FOR UPDATE")
