"""The search side's login: the reader role itself, where the server allows it.

A connection that logs in as the migrating user and only runs SET ROLE can take
its rights back (RESET ROLE, SET SESSION AUTHORIZATION). Logged in as
pgrecall_reader (a LOGIN role since migration 0008), a connection has no more
rights to return to: it reads the index and nothing else.

The embedded server trusts its local socket, so the reader logs in without a
password. An external server may ask for one: the first search process that
finds the reader locked out sets a random password (sent as a SCRAM verifier,
so it never appears in the server's logs) and keeps it in pgrecall.reader_login,
which only the migrating user can read; every later search process, on any
machine, reads it there. Where none of this is possible (no reader role, no
right to change it, a server that refuses the reader), searches keep SET ROLE
and read-only transactions, and one warning event says why.
"""

from __future__ import annotations

import secrets

import psycopg
import structlog
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from pgrecall import database, queries
from pgrecall.errors import first_line
from pgrecall.settings import Settings

READER = "pgrecall_reader"

_Q = queries.load("search.sql")
log = structlog.get_logger(__name__)


class NoReaderLogin(Exception):
    """The search side cannot log in as the reader role; the message says why."""


def search_login(settings: Settings, url: str) -> str:
    """The URL searches connect with: PGRECALL_SEARCH_DATABASE_URL as given, else the reader's login on `url`.

    `url` is the migrating user's (the index's database). Falls back to `url`
    itself, with a warning, where the reader cannot log in.
    """
    if settings.search_database_url:
        return settings.search_database_url
    try:
        return reader_url(url)
    except NoReaderLogin as exc:
        log.warning("search_login_fallback", reason=str(exc), fallback="SET ROLE pgrecall_reader, read-only")
        return url


def reader_url(url: str) -> str:
    """A URL that logs in to `url`'s database as pgrecall_reader; NoReaderLogin where there is none."""
    with database.connect(url, autocommit=True) as conn:
        if conn.info.user == READER:
            return url
        row = conn.execute(_Q["reader_can_log_in"]).fetchone()
        if row is None:
            raise NoReaderLogin(f"there is no role {READER} (the migrating user may not create roles)")
        if not row[0]:
            raise NoReaderLogin(f"{READER} may not log in (the migrating user may not change roles)")
        stored = _stored_password(conn)
        try:
            return _login(url, stored)  # a server that trusts the reader needs no password
        except psycopg.OperationalError:
            pass  # no password yet, or one the server no longer takes
        password = _renew_password(conn, stale=stored)
        try:
            return _login(url, password)
        except psycopg.OperationalError as exc:
            raise NoReaderLogin(f"the server refuses {READER}: {first_line(exc)}") from exc


def _stored_password(conn: psycopg.Connection) -> str | None:
    try:
        with conn.transaction():
            row = conn.execute(_Q["reader_password"]).fetchone()
    except (psycopg.errors.UndefinedTable, psycopg.errors.InsufficientPrivilege):
        return None  # a schema before 0008, or a table of another user's: _renew_password says so
    return row[0] if row else None


def _renew_password(conn: psycopg.Connection, stale: str | None) -> str:
    """Set a new random password, unless another process has just done so; return the one in force."""
    try:
        with conn.transaction():
            conn.execute(_Q["lock_reader_password"])
            row = conn.execute(_Q["reader_password"]).fetchone()
            if row and row[0] != stale:
                return row[0]
            password = secrets.token_urlsafe(32)
            verifier = conn.pgconn.encrypt_password(password.encode(), READER.encode()).decode()
            conn.execute(sql.SQL(_Q["set_reader_password"]).format(verifier=sql.Literal(verifier)))
            conn.execute(_Q["save_reader_password"], {"password": password})
    except (psycopg.errors.UndefinedTable, psycopg.errors.InsufficientPrivilege) as exc:
        raise NoReaderLogin(f"cannot set a password for {READER}: {first_line(exc)}") from exc
    log.info("reader_password_set", role=READER)
    return password


def _login(url: str, password: str | None) -> str:
    """The reader's URL, once a connection with it has succeeded; OperationalError otherwise."""
    params = conninfo_to_dict(url)
    params.pop("password", None)  # the migrating user's
    params["user"] = READER
    if password is not None:
        params["password"] = password
    params.setdefault("connect_timeout", str(database.CONNECT_TIMEOUT_S))
    candidate = make_conninfo(**params)
    with psycopg.connect(candidate) as conn:
        conn.execute("SELECT 1")
    return candidate
