"""Apply sql/migrations/*.sql in order, once each, and Procrastinate's schema.

Each applied file is recorded with its checksum; an applied file that was
edited afterwards stops the migrator instead of leaving the schema in a state
no file describes.
"""

from __future__ import annotations

import dataclasses
import hashlib
from importlib import resources

import psycopg
import structlog

from pgrecall.errors import MigrationError

# Serialises concurrent migrators (several workers starting at once).
_ADVISORY_LOCK_KEY = 0x70677263  # "pgrc"
PROCRASTINATE_MIGRATION = "procrastinate-schema"

log = structlog.get_logger(__name__)


@dataclasses.dataclass(frozen=True)
class Migration:
    name: str
    sql: str

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.sql.encode()).hexdigest()


def bundled_migrations() -> list[Migration]:
    folder = resources.files("pgrecall.sql") / "migrations"
    files = sorted((f for f in folder.iterdir() if f.name.endswith(".sql")), key=lambda f: f.name)
    return [Migration(f.name, f.read_text(encoding="utf-8")) for f in files]


def procrastinate_migration() -> Migration:
    from procrastinate.schema import SchemaManager

    return Migration(PROCRASTINATE_MIGRATION, SchemaManager.get_schema())


def migrate(conn: psycopg.Connection, migrations: list[Migration] | None = None) -> list[str]:
    """Apply what is missing; return the names applied. Runs in one transaction."""
    migrations = bundled_migrations() if migrations is None else migrations
    applied_now: list[str] = []
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_ADVISORY_LOCK_KEY,))
        conn.execute("CREATE SCHEMA IF NOT EXISTS pgrecall")
        conn.execute(
            """CREATE TABLE IF NOT EXISTS pgrecall.schema_migrations (
                   name text PRIMARY KEY,
                   checksum text NOT NULL,
                   applied_at timestamptz NOT NULL DEFAULT now())"""
        )
        applied = dict(conn.execute("SELECT name, checksum FROM pgrecall.schema_migrations").fetchall())
        # The queue's schema comes first: our migrations may refer to its tables.
        if PROCRASTINATE_MIGRATION not in applied:
            _apply_procrastinate(conn)
            applied_now.append(PROCRASTINATE_MIGRATION)
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
    for name in applied_now:
        log.info("migration_applied", migration=name)
    return applied_now


def _apply(conn: psycopg.Connection, migration: Migration) -> None:
    try:
        conn.execute(migration.sql.encode())  # bytes: a script, no parameter parsing
    except psycopg.Error as exc:
        raise MigrationError(f"migration {migration.name} failed: {exc}".splitlines()[0]) from exc
    conn.execute(
        "INSERT INTO pgrecall.schema_migrations (name, checksum) VALUES (%s, %s)",
        (migration.name, migration.checksum),
    )


def _apply_procrastinate(conn: psycopg.Connection) -> None:
    # Procrastinate's full schema is only for an empty database; one already
    # holding its tables (a shared server) is left to its own migrations.
    exists = conn.execute("SELECT to_regclass('public.procrastinate_jobs') IS NOT NULL").fetchone()[0]
    migration = procrastinate_migration()
    if not exists:
        conn.execute(migration.sql.encode())
    conn.execute(
        "INSERT INTO pgrecall.schema_migrations (name, checksum) VALUES (%s, %s)",
        (migration.name, migration.checksum),
    )
