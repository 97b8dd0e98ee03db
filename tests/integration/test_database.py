"""The embedded server: started, stopped and started again within one process."""

import psycopg
import pytest

from pgrecall import database
from pgrecall.errors import DatabaseUnavailable
from pgrecall.settings import load_settings


def test_embedded_server_stops_and_starts_again_in_one_process(tmp_path):
    settings = load_settings({"PGRECALL_HOME": str(tmp_path / "home")})
    url = database.start_embedded(settings)
    try:
        with psycopg.connect(url) as conn:
            assert conn.execute("SELECT current_database()").fetchone() == ("pgrecall",)
        assert database.stop_embedded(settings) is True
        with pytest.raises(DatabaseUnavailable), database.connect(url):
            pass
        assert database.stop_embedded(settings) is False  # not running: nothing to stop
        assert database.start_embedded(settings) == url
        with psycopg.connect(url) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
    finally:
        database.stop_embedded(settings)


def test_ensure_database_is_idempotent_and_fresh_drops(server_url):
    name = "pgrecall_ensure_test"
    url = database.ensure_database(server_url, name)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE marker (id int)")
    assert database.ensure_database(server_url, name) == url
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT to_regclass('marker')").fetchone()[0] is not None
    database.ensure_database(server_url, name, fresh=True)
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT to_regclass('marker')").fetchone()[0] is None
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute("DROP DATABASE pgrecall_ensure_test WITH (FORCE)")
