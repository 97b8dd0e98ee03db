import pytest

from pgrecall import database
from pgrecall.errors import MigrationError
from pgrecall.migrate import PROCRASTINATE_MIGRATION, Migration, bundled_migrations, migrate


def _schema_snapshot(conn):
    return conn.execute(
        """SELECT table_schema, table_name, column_name, data_type
           FROM information_schema.columns
           WHERE table_schema IN ('pgrecall', 'public')
           ORDER BY 1, 2, 3"""
    ).fetchall()


def test_migrating_twice_changes_nothing(empty_db_url):
    with database.connect(empty_db_url) as conn:
        first = migrate(conn)
        snapshot = _schema_snapshot(conn)
        second = migrate(conn)
        assert first == [PROCRASTINATE_MIGRATION] + [m.name for m in bundled_migrations()]
        assert second == []
        assert _schema_snapshot(conn) == snapshot
        tables = {row[0] for row in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'pgrecall'")}
        assert {"documents", "chunks", "postings", "term_stats", "corpus_stats", "schema_migrations"} <= tables
        assert conn.execute("SELECT to_regclass('public.procrastinate_jobs')").fetchone()[0] is not None


def test_an_edited_applied_migration_is_refused(empty_db_url):
    original = bundled_migrations()
    with database.connect(empty_db_url) as conn:
        migrate(conn, original)
        edited = [Migration(original[0].name, original[0].sql + "\n-- edited\n"), *original[1:]]
        with pytest.raises(MigrationError, match="edited after it was applied"):
            migrate(conn, edited)


def test_a_new_migration_is_applied_after_the_others(empty_db_url):
    extra = Migration("9999_test.sql", "CREATE TABLE pgrecall.test_extra (id int);")
    with database.connect(empty_db_url) as conn:
        migrate(conn)
        assert migrate(conn, [*bundled_migrations(), extra]) == ["9999_test.sql"]
        assert conn.execute("SELECT to_regclass('pgrecall.test_extra')").fetchone()[0] is not None


def test_a_failing_migration_leaves_nothing_behind(empty_db_url):
    broken = Migration("9998_broken.sql", "CREATE TABLE pgrecall.half (id int); SELECT no_such_function();")
    with database.connect(empty_db_url) as conn:
        migrate(conn)
        with pytest.raises(MigrationError, match="9998_broken.sql failed"):
            migrate(conn, [*bundled_migrations(), broken])
        assert conn.execute("SELECT to_regclass('pgrecall.half')").fetchone()[0] is None
