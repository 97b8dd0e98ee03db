"""The search side's login, provisioned by the migrating side: every migration for writing runs it.

Searches log in as pgrecall_reader itself (pgrecall.api.reader): a connection of
that role has no rights to write and none to return to. The embedded server
trusts its local socket, so the reader needs no password there. Where the server
asks for one, a migration sets a random password (sent as a SCRAM verifier, so
it never appears in the server's logs) and keeps it in pgrecall.reader_login,
which only the migrating user can read; every search process, on any machine,
reads it there. A stored password the server no longer takes is replaced by the
next migration (`pgrecall migrate`, `index`, `serve`), never by a search: the
search side only reads. Where the migrating user may not change the role, the
migration stands, one warning says why, and searches fall back to SET ROLE.
"""

from __future__ import annotations

import secrets

import psycopg
import structlog
from psycopg import sql

from pgrecall.errors import first_line
from pgrecall.postgres import queries, reader_role
from pgrecall.postgres.reader_role import READER

_Q = queries.load("reader_login.sql")
log = structlog.get_logger(__name__)


def provision(conn: psycopg.Connection) -> None:
    """Keep a stored password the reader logs in with; set and store a new one where it does not
    (none yet, or one the server no longer takes). Where that is not allowed, a warning: never an error."""
    params = conn.info.get_parameters()  # the migrating user's server and database, without its password
    try:
        with conn.transaction():
            conn.execute(_Q["lock_reader_password"])
            row = conn.execute(_Q["reader_can_log_in"]).fetchone()
            if row is None or not row[0]:
                return  # no reader role, or one that may not log in (0003, 0008 said why): searches fall back
            row = conn.execute(_Q["reader_password"]).fetchone()
            try:
                reader_role.login(params, row[0] if row else None)  # a server that trusts the reader needs none
                return
            except psycopg.OperationalError:
                pass
            password = secrets.token_urlsafe(32)
            verifier = conn.pgconn.encrypt_password(password.encode(), READER.encode()).decode()
            conn.execute(sql.SQL(_Q["set_reader_password"]).format(verifier=sql.Literal(verifier)))
            conn.execute(_Q["save_reader_password"], {"password": password})
    except psycopg.errors.UndefinedTable:
        return  # a schema before 0008 (a migration list of a test's own)
    except psycopg.errors.InsufficientPrivilege as exc:
        log.warning("reader_login_not_provisioned", role=READER, reason=first_line(exc))
        return
    log.info("reader_password_set", role=READER)
    try:
        reader_role.login(params, password)
    except psycopg.OperationalError as exc:
        log.warning("reader_login_not_provisioned", role=READER, reason=f"the server refuses it: {first_line(exc)}")
