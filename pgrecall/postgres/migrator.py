"""Apply sql/migrations/*.sql in order, once each, and keep Procrastinate's schema current.

Each applied file is recorded with its checksum; an applied file that was
edited afterwards stops the migrator instead of leaving the schema in a state
no file describes.

The queue's schema is Procrastinate's: a new database gets its full schema,
and each of its migration files (`procrastinate/sql/migrations/`) is recorded
as applied; after an upgrade of the package, the files that are new are
applied in order, so the queue's functions always match the code calling them.

Then the search side's login is provisioned (pgrecall.postgres.reader_login): the
migrating side, not a search, sets the reader's password where the server asks
for one.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from importlib import resources

import psycopg
import structlog
from psycopg import sql

from pgrecall.errors import MigrationError
from pgrecall.postgres import database, reader_login
from pgrecall.postgres.locks import MIGRATION_LOCK_KEY
from pgrecall.settings import Settings

PROCRASTINATE_MIGRATION = "procrastinate-schema"
QUEUE_PREFIX = "procrastinate/"
# Databases migrated before the queue's files were recorded one by one hold only
# the PROCRASTINATE_MIGRATION row. Their schema came from a Procrastinate of at
# least this version, the dependency's floor ever since: its migrations count as applied.
LEGACY_QUEUE_VERSION = (3, 5, 0)
# A role is shared by the whole server: two databases migrated at the same
# moment (the index and an eval) can race to create it. The loser retries.
_RETRIES_ON_CONCURRENT_ROLE = 3

log = structlog.get_logger(__name__)


@dataclasses.dataclass(frozen=True)
class Migration:
    name: str
    sql: str

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.sql.encode()).hexdigest()

    @property
    def vacuum_after(self) -> list[str]:
        """Tables the migration names in `-- vacuum after: schema.table` lines: a table it rebuilt
        has no visibility map until vacuumed, so index-only scans would read the heap until then."""
        return re.findall(r"^-- vacuum after: ([\w.]+)$", self.sql, flags=re.MULTILINE)


def bundled_migrations() -> list[Migration]:
    folder = resources.files("pgrecall.sql") / "migrations"
    files = sorted((f for f in folder.iterdir() if f.name.endswith(".sql")), key=lambda f: f.name)
    return [Migration(f.name, f.read_text(encoding="utf-8")) for f in files]


def procrastinate_migration() -> Migration:
    from procrastinate.schema import SchemaManager

    return Migration(PROCRASTINATE_MIGRATION, SchemaManager.get_schema())


def queue_migrations() -> list[Migration]:
    """Procrastinate's migration files, oldest first (named `procrastinate/<file>`)."""
    folder = resources.files("procrastinate.sql") / "migrations"
    files = sorted((f for f in folder.iterdir() if f.name.endswith(".sql")), key=lambda f: f.name)
    return [Migration(QUEUE_PREFIX + f.name, f.read_text(encoding="utf-8")) for f in files]


def queue_migration_version(migration: Migration) -> tuple[int, ...]:
    """The Procrastinate release that introduced a migration: "03.01.00_01_pre_add_heartbeat.sql" -> (3, 1, 0)."""
    return tuple(int(part) for part in migration.name.removeprefix(QUEUE_PREFIX)[:8].split("."))


def migrated_url(settings: Settings) -> str:
    """The index's database (the embedded server started if needed), migrated and the reader's login
    provisioned: what every command that writes uses."""
    url = database.database_url(settings)
    with database.connect(url) as conn:
        migrate(conn)
    return url


def ensure_ledger(conn: psycopg.Connection) -> None:
    conn.execute("CREATE SCHEMA IF NOT EXISTS pgrecall")
    conn.execute(
        """CREATE TABLE IF NOT EXISTS pgrecall.schema_migrations (
               name text PRIMARY KEY,
               checksum text NOT NULL,
               applied_at timestamptz NOT NULL DEFAULT now())"""
    )


def record(conn: psycopg.Connection, migration: Migration) -> None:
    conn.execute(
        "INSERT INTO pgrecall.schema_migrations (name, checksum) VALUES (%s, %s)",
        (migration.name, migration.checksum),
    )


def migrate(
    conn: psycopg.Connection,
    migrations: list[Migration] | None = None,
    queue: list[Migration] | None = None,
    *,
    provision_reader: bool = True,
) -> list[str]:
    """Apply what is missing, in one transaction; return the names applied. Then, with `provision_reader`,
    provision the search side's login (pgrecall.postgres.reader_login): a scratch database (an eval's)
    passes False, so that it does not take the server-wide reader role's password from the index."""
    migrations = bundled_migrations() if migrations is None else migrations
    for attempt in range(1, _RETRIES_ON_CONCURRENT_ROLE + 1):
        try:
            applied_now = _migrate_once(conn, migrations, queue)
        except MigrationError as exc:
            concurrent_role = isinstance(
                exc.__cause__, (psycopg.errors.UniqueViolation, psycopg.errors.DuplicateObject)
            )
            if not concurrent_role or attempt == _RETRIES_ON_CONCURRENT_ROLE:
                raise
            log.info("migration_retried", reason="role created concurrently", attempt=attempt)
            continue
        for name in applied_now:
            log.info("migration_applied", migration=name)
        _vacuum_rebuilt_tables(conn, migrations, applied_now)
        if provision_reader:
            reader_login.provision(conn)
        return applied_now
    raise AssertionError("unreachable")


def _vacuum_rebuilt_tables(conn: psycopg.Connection, migrations: list[Migration], applied: list[str]) -> None:
    """VACUUM (ANALYZE) what the migrations just applied rebuilt; outside any transaction, where the
    caller's connection allows it (a caller's open transaction leaves it to autovacuum)."""
    names = set(applied)
    tables = [table for m in migrations if m.name in names for table in m.vacuum_after]
    if not tables or conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
        return
    autocommit = conn.autocommit
    conn.autocommit = True
    try:
        for table in tables:
            conn.execute(sql.SQL("VACUUM (ANALYZE) {}").format(sql.Identifier(*table.split("."))))
            log.info("migration_vacuumed", table=table)
    finally:
        conn.autocommit = autocommit


def _migrate_once(conn: psycopg.Connection, migrations: list[Migration], queue: list[Migration] | None) -> list[str]:
    queue = queue_migrations() if queue is None else queue
    applied_now: list[str] = []
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK_KEY,))
        # Procrastinate's schema names no schema: its objects belong in public (0003 refers to
        # public.procrastinate_jobs). A login named pgrecall would otherwise put them in our
        # schema, the "$user" entry of the default search_path. The rest of the path is kept
        # (an extension schema a DBA put there).
        conn.execute("SELECT set_config('search_path', 'public, ' || current_setting('search_path'), true)")
        ensure_ledger(conn)
        applied = dict(conn.execute("SELECT name, checksum FROM pgrecall.schema_migrations").fetchall())
        # The queue's schema comes first: our migrations refer to its tables.
        applied_now += _migrate_queue(conn, applied, queue)
        for migration in migrations:
            recorded = applied.get(migration.name)
            if recorded is not None:
                if recorded != migration.checksum:
                    raise MigrationError(
                        f"migration {migration.name} was edited after it was applied "
                        f"(checksum {migration.checksum[:12]} != recorded {recorded[:12]}); "
                        "add a new migration instead of editing an applied one"
                    )
                continue
            _apply(conn, migration)
            applied_now.append(migration.name)
    return applied_now


def _migrate_queue(conn: psycopg.Connection, applied: dict[str, str], queue: list[Migration]) -> list[str]:
    recorded = {name for name in applied if name.startswith(QUEUE_PREFIX)}
    applied_now = []
    if not recorded:
        exists = conn.execute("SELECT to_regclass('public.procrastinate_jobs') IS NOT NULL").fetchone()[0]
        if exists:
            # Applied by an earlier pgrecall (or by Procrastinate itself on a
            # shared server): at least the legacy version's schema.
            baseline = [m for m in queue if queue_migration_version(m) <= LEGACY_QUEUE_VERSION]
        else:
            full = procrastinate_migration()
            _execute(conn, full)
            if full.name not in applied:
                record(conn, full)
            applied_now.append(full.name)
            baseline = queue
        for migration in baseline:
            record(conn, migration)
        recorded = {m.name for m in baseline}
    for migration in queue:
        if migration.name not in recorded:
            _apply(conn, migration)
            applied_now.append(migration.name)
    return applied_now


def _execute(conn: psycopg.Connection, migration: Migration) -> None:
    try:
        conn.execute(migration.sql.encode())  # bytes: a script, no parameter parsing
    except psycopg.Error as exc:
        raise MigrationError(f"migration {migration.name} failed: {exc}".splitlines()[0]) from exc


def _apply(conn: psycopg.Connection, migration: Migration) -> None:
    _execute(conn, migration)
    record(conn, migration)
