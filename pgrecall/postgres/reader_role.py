"""The search side's role, pgrecall_reader (migrations 0003 and 0008): its name and a login as it.

Shared by the migrating side, which provisions the login (pgrecall.postgres.reader_login),
and the search side, which only uses it (pgrecall.api.reader).
"""

from __future__ import annotations

from collections.abc import Mapping

import psycopg
from psycopg.conninfo import make_conninfo

from pgrecall.postgres import database

READER = "pgrecall_reader"


def login(params: Mapping[str, str], password: str | None) -> str:
    """The conninfo that logs in as the reader where `params` (the migrating user's) log in, once a
    connection with it has succeeded; psycopg.OperationalError where the server refuses it."""
    candidate = {key: value for key, value in params.items() if key != "password"}  # the migrating user's
    candidate["user"] = READER
    if password is not None:
        candidate["password"] = password
    candidate.setdefault("connect_timeout", str(database.CONNECT_TIMEOUT_S))
    url = make_conninfo(**candidate)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SELECT 1")
    return url
