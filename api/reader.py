"""The search side's login: the reader role itself, with the login the migrating side stored.

A connection that logs in as the migrating user and only runs SET ROLE can take
its rights back (RESET ROLE, SET SESSION AUTHORIZATION). Logged in as
pgrecall_reader (a LOGIN role since migration 0008), a connection has no more
rights to return to: it reads the index and nothing else.

The embedded server trusts its local socket, so the reader logs in without a
password. An external server may ask for one: the migrating side (the module
pgrecall.postgres.reader_login, run by `migrate`, `index`, `serve`) sets it and keeps it
in the table pgrecall.reader_login; this module only reads it there, in a
read-only transaction, and never sets or renews one. Where the reader cannot log in (no reader role,
none that may log in, no stored password the server takes), searches keep
SET ROLE and read-only transactions, and one warning event says why.
"""

from __future__ import annotations

import psycopg
import structlog
from psycopg.conninfo import conninfo_to_dict

from pgrecall.errors import first_line
from pgrecall.postgres import database, queries, reader_role
from pgrecall.postgres.reader_role import READER
from pgrecall.settings import Settings

_Q = queries.load("search.sql")
log = structlog.get_logger(__name__)


class NoReaderLogin(Exception):
    """The search side cannot log in as the reader role; the message says why."""


def search_login(settings: Settings, url: str, conn: psycopg.Connection | None = None) -> str:
    """The URL searches connect with: PGRECALL_SEARCH_DATABASE_URL as given, else the reader's login on `url`.

    `url` is the migrating user's (the index's database); `conn`, where given, an open
    connection of it (read only) to ask on instead of a new one. Falls back to `url`
    itself, with a warning, where the reader cannot log in.
    """
    if settings.search_database_url:
        return settings.search_database_url
    try:
        return reader_url(url, conn)
    except NoReaderLogin as exc:
        log.warning("search_login_fallback", reason=str(exc), fallback="SET ROLE pgrecall_reader, read-only")
        return url


def reader_url(url: str, conn: psycopg.Connection | None = None) -> str:
    """A URL that logs in to `url`'s database as pgrecall_reader with the stored login; NoReaderLogin where
    there is none. Reads only, on `conn` where given (a connection of `url`)."""
    if conn is None:
        with database.connect(url, read_only=True, vectors=False) as own:
            return reader_url(url, own)
    if conn.info.user == READER:
        return url
    row = conn.execute(_Q["reader_can_log_in"]).fetchone()
    if row is None:
        raise NoReaderLogin(f"there is no role {READER} (the migrating user may not create roles)")
    if not row[0]:
        raise NoReaderLogin(f"{READER} may not log in (the migrating user may not change roles)")
    stored = _stored_password(conn)
    try:
        return reader_role.login(conninfo_to_dict(url), stored)  # a server that trusts the reader needs none
    except psycopg.OperationalError as exc:
        which = "without a password" if stored is None else "with the stored password"
        raise NoReaderLogin(
            f"the server refuses {READER} {which} ({first_line(exc)}): run pgrecall migrate to set a new one"
        ) from exc


def _stored_password(conn: psycopg.Connection) -> str | None:
    try:
        row = conn.execute(_Q["reader_password"]).fetchone()
    except (psycopg.errors.UndefinedTable, psycopg.errors.InsufficientPrivilege):
        return None  # a schema before 0008, or a table of another user's: the login is tried without
    return row[0] if row else None
