"""Least privilege for real: the search side logs in as pgrecall_reader, which cannot write.

A connection that logged in as the superuser and only ran SET ROLE can take its
rights back; these tests try exactly that on the connections searches use.
"""

from __future__ import annotations

import concurrent.futures
import shutil
import tempfile
from pathlib import Path

import psycopg
import pytest
import structlog
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from pgrecall import database
from pgrecall.api import reader
from pgrecall.api.search import Searcher
from pgrecall.migrate import migrate
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


@pytest.fixture(scope="module")
def password_server():
    home = Path(tempfile.mkdtemp(prefix="pgrecall-password-"))
    settings = load_settings({"PGRECALL_HOME": str(home)})
    try:
        url = database.start_embedded(settings)
        hba = database.pgdata_path(settings) / "pg_hba.conf"
        hba.write_text("local all pgrecall_reader scram-sha-256\n" + hba.read_text())
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("SELECT pg_reload_conf()")
        with database.connect(url) as conn:
            migrate(conn)
        yield url
    finally:
        database.stop_embedded(settings)
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture
def fresh_password(password_server):
    """No stored password, and none the reader could log in with."""
    with psycopg.connect(password_server, autocommit=True) as conn:
        conn.execute("DELETE FROM pgrecall.reader_login")
        conn.execute("ALTER ROLE pgrecall_reader LOGIN PASSWORD NULL")
    return password_server


def _reader(url: str, **params: str) -> psycopg.Connection:
    return psycopg.connect(make_conninfo(url, user="pgrecall_reader", **params))


def test_the_server_really_asks_the_reader_for_a_password(fresh_password):
    with pytest.raises(psycopg.OperationalError):
        _reader(fresh_password).close()


def test_a_password_is_set_kept_and_used(fresh_password, tmp_path):
    settings = load_settings({"PGRECALL_HOME": str(tmp_path)})
    url = reader.search_login(settings, fresh_password)
    assert conninfo_to_dict(url)["user"] == "pgrecall_reader"
    with psycopg.connect(fresh_password) as conn:
        (stored,) = conn.execute("SELECT password FROM pgrecall.reader_login").fetchone()
        (verifier,) = conn.execute("SELECT rolpassword FROM pg_authid WHERE rolname = 'pgrecall_reader'").fetchone()
    assert verifier.startswith("SCRAM-SHA-256$") and stored not in verifier
    with _reader(fresh_password, password=stored) as conn, pytest.raises(psycopg.errors.InsufficientPrivilege):
        _attempt(conn, ESCAPES[0])
    with pytest.raises(psycopg.OperationalError):
        _reader(fresh_password, password="wrong").close()
    # A second process reads the stored password instead of setting another.
    assert reader.search_login(settings, fresh_password) == url


def test_a_stale_password_is_replaced(fresh_password, tmp_path):
    settings = load_settings({"PGRECALL_HOME": str(tmp_path)})
    first = conninfo_to_dict(reader.search_login(settings, fresh_password))["password"]
    with psycopg.connect(fresh_password, autocommit=True) as conn:
        conn.execute("ALTER ROLE pgrecall_reader PASSWORD 'changed-behind-its-back'")
    url = reader.search_login(settings, fresh_password)
    assert conninfo_to_dict(url)["password"] != first
    psycopg.connect(url).close()


def test_processes_starting_together_agree_on_one_password(fresh_password, tmp_path):
    settings = load_settings({"PGRECALL_HOME": str(tmp_path)})
    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        urls = list(pool.map(lambda _: reader.search_login(settings, fresh_password), range(6)))
    assert len({conninfo_to_dict(url)["password"] for url in urls}) == 1
    for url in urls:
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
