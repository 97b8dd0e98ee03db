import pytest

from pgrecall.errors import MigrationError
from pgrecall.postgres import database
from pgrecall.postgres.migrator import PROCRASTINATE_MIGRATION, Migration, bundled_migrations, migrate


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


def test_a_table_a_migration_rebuilt_is_vacuumed_once_it_has_committed(empty_db_url):
    rebuild = Migration(
        "9997_rebuild.sql",
        "CREATE TABLE pgrecall.rebuilt AS SELECT g AS id FROM generate_series(1, 1000) g;\n"
        "CREATE INDEX ON pgrecall.rebuilt (id);\n-- vacuum after: pgrecall.rebuilt\n",
    )
    assert rebuild.vacuum_after == ["pgrecall.rebuilt"]
    with database.connect(empty_db_url) as conn:
        migrate(conn, [*bundled_migrations(), rebuild])
        # Vacuumed: the visibility map is set, so index-only scans need not read the heap.
        visible = conn.execute(
            "SELECT relallvisible, relpages FROM pg_class WHERE oid = 'pgrecall.rebuilt'::regclass"
        ).fetchone()
        assert visible[0] == visible[1] > 0
        assert conn.execute(
            "SELECT last_vacuum IS NOT NULL FROM pg_stat_user_tables WHERE relid = 'pgrecall.postings'::regclass"
        ).fetchone()[0]  # 0014 asks for it: its postings table is rebuilt


def test_a_failing_migration_leaves_nothing_behind(empty_db_url):
    broken = Migration("9998_broken.sql", "CREATE TABLE pgrecall.half (id int); SELECT no_such_function();")
    with database.connect(empty_db_url) as conn:
        migrate(conn)
        with pytest.raises(MigrationError, match="9998_broken.sql failed"):
            migrate(conn, [*bundled_migrations(), broken])
        assert conn.execute("SELECT to_regclass('pgrecall.half')").fetchone()[0] is None


def _queue_schema(conn):
    """Procrastinate's objects as the catalog describes them: tables, indexes, functions, triggers, types."""
    return {
        "columns": conn.execute(
            """SELECT table_name, column_name, data_type, is_nullable, column_default
               FROM information_schema.columns
               WHERE table_schema = 'public' AND table_name LIKE 'procrastinate%' ORDER BY 1, 2"""
        ).fetchall(),
        "indexes": conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' ORDER BY 1"
        ).fetchall(),
        "functions": conn.execute(
            """SELECT p.proname, pg_get_function_identity_arguments(p.oid), pg_get_function_result(p.oid)
               FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
               WHERE n.nspname = 'public' AND p.proname LIKE 'procrastinate%' ORDER BY 1, 2"""
        ).fetchall(),
        "triggers": conn.execute(
            """SELECT tgname, pg_get_triggerdef(t.oid) FROM pg_trigger t
               WHERE NOT tgisinternal AND tgname LIKE 'procrastinate%' ORDER BY 1"""
        ).fetchall(),
        "enums": conn.execute(
            """SELECT t.typname, e.enumlabel FROM pg_enum e JOIN pg_type t ON t.oid = e.enumtypid
               WHERE t.typname LIKE 'procrastinate%' ORDER BY 1, e.enumsortorder"""
        ).fetchall(),
    }


@pytest.fixture
def second_empty_db_url(server_url):
    import uuid

    import psycopg
    from psycopg import sql

    name = f"pgrecall_empty_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    yield psycopg.conninfo.make_conninfo(server_url, dbname=name)
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def test_an_older_queue_schema_is_upgraded_by_procrastinates_migrations(empty_db_url, second_empty_db_url, tmp_path):
    """A database left by an older Procrastinate (3.0, before worker heartbeats) gets the newer
    migrations, ends like a fresh database, and its queue works with the installed Procrastinate."""
    import asyncio

    from pgrecall.postgres.migrator import ensure_ledger, queue_migration_version, queue_migrations, record
    from pgrecall.worker import tasks

    queue = queue_migrations()
    older = [m for m in queue if queue_migration_version(m) < (3, 1, 0)]
    newer = [m.name for m in queue if queue_migration_version(m) >= (3, 1, 0)]
    assert older and newer
    with database.connect(empty_db_url) as conn:
        with conn.transaction():
            ensure_ledger(conn)
            for migration in older:  # the queue as Procrastinate 3.0 left it
                conn.execute(migration.sql.encode())
                record(conn, migration)
        assert conn.execute("SELECT to_regclass('public.procrastinate_workers')").fetchone()[0] is None
        applied = migrate(conn)
        assert applied == newer + [m.name for m in bundled_migrations()]
        upgraded = _queue_schema(conn)
        assert migrate(conn) == []
    with database.connect(second_empty_db_url) as conn:
        migrate(conn)
        assert _queue_schema(conn) == upgraded

    async def run_one_job():
        app = tasks.build_app(empty_db_url)
        async with app.open_async():
            await tasks.enqueue(app, tasks.REMOVE_TASK, str(tmp_path), ["gone.md"])
            from pgrecall.embedders.embedding import embedder_for
            from pgrecall.postgres.database import open_async_pool as open_pool
            from pgrecall.settings import load_settings
            from pgrecall.worker.pipeline import Indexer

            pool = await open_pool(empty_db_url)
            settings = load_settings({"PGRECALL_HOME": str(tmp_path / "home")})
            indexer = Indexer(pool, embedder_for(settings), None, chunk_tokens=settings.chunk_tokens)
            try:
                await app.run_worker_async(
                    **tasks.worker_options(settings, indexer, wait=False), **tasks.heartbeat_options(settings)
                )
            finally:
                await pool.close()

    asyncio.run(run_one_job())  # heartbeats and all: 3.1's functions are there
    with database.connect(empty_db_url) as conn:
        assert conn.execute("SELECT count(*) FROM procrastinate_jobs").fetchone()[0] == 0  # done and deleted


def test_a_database_from_before_the_queue_ledger_is_adopted_without_reapplying(empty_db_url):
    with database.connect(empty_db_url) as conn:
        migrate(conn)
        with conn.transaction():  # as pgrecall recorded the queue before it kept its migrations one by one
            conn.execute("DELETE FROM pgrecall.schema_migrations WHERE name LIKE 'procrastinate/%'")
        assert migrate(conn) == []
        recorded = conn.execute("SELECT count(*) FROM pgrecall.schema_migrations WHERE name LIKE 'procrastinate/%'")
        from pgrecall.postgres.migrator import queue_migrations

        assert recorded.fetchone()[0] == len(queue_migrations())


def test_concurrent_migrators_apply_everything_once(empty_db_url):
    from concurrent.futures import ThreadPoolExecutor

    def run(_):
        with database.connect(empty_db_url) as conn:
            return migrate(conn)

    with ThreadPoolExecutor(6) as pool:
        results = list(pool.map(run, range(6)))
    applied = [names for names in results if names]
    assert len(applied) == 1  # one did the work, the others found it done
    with database.connect(empty_db_url) as conn:
        assert migrate(conn) == []
