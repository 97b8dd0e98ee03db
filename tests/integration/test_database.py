"""The embedded server: started, stopped and started again within one process."""

import psycopg
import pytest

from pgrecall.errors import DatabaseUnavailable
from pgrecall.postgres import database
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


def test_a_running_servers_url_is_read_from_its_pid_file_and_anything_else_takes_the_start_path(tmp_path):
    """What `running_embedded_url` finds decides nothing it cannot confirm with a connection."""
    settings = load_settings({"PGRECALL_HOME": str(tmp_path / "home")})
    assert database.running_embedded_url(settings) is None  # no server yet
    url = database.start_embedded(settings)  # the package's start path
    pid_file = database.pgdata_path(settings) / "postmaster.pid"
    try:
        assert database.running_embedded_url(settings) == url  # the same URL the start path gives
        assert database.start_embedded(settings) == url
        lines = pid_file.read_text().splitlines()
        pid_file.write_text("\n".join([*lines[:4], str(tmp_path / "elsewhere"), *lines[5:]]) + "\n")
        assert database.running_embedded_url(settings) is None  # a socket that is not there
        pid_file.write_text("\n".join([*lines[:7], "stopping"]) + "\n")
        assert database.running_embedded_url(settings) is None  # a server going down
        pid_file.write_text("garbage")
        assert database.running_embedded_url(settings) is None
        pid_file.write_text("\n".join(lines) + "\n")
        with psycopg.connect(database.running_embedded_url(settings)) as conn:
            assert conn.execute("SELECT current_database()").fetchone() == ("pgrecall",)
    finally:
        database.stop_embedded(settings)
    assert database.running_embedded_url(settings) is None  # stopped: the pid file is gone


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


def test_the_embedded_server_takes_its_shared_buffers_at_each_start(tmp_path):
    """PGRECALL_SHARED_BUFFERS reaches the server at its first start and at a later one; a value the
    server refuses is a one-line DatabaseUnavailable, and the next start with a good one works."""
    home = str(tmp_path / "home")
    settings = load_settings({"PGRECALL_HOME": home, "PGRECALL_SHARED_BUFFERS": "160MB"})
    try:
        url = database.start_embedded(settings)
        with psycopg.connect(url) as conn:
            assert conn.execute("SHOW shared_buffers").fetchone() == ("160MB",)
        database.stop_embedded(settings)
        again = load_settings({"PGRECALL_HOME": home, "PGRECALL_SHARED_BUFFERS": "192MB"})
        with psycopg.connect(database.start_embedded(again)) as conn:
            assert conn.execute("SHOW shared_buffers").fetchone() == ("192MB",)
        database.stop_embedded(again)
        too_large = load_settings({"PGRECALL_HOME": home, "PGRECALL_SHARED_BUFFERS": "64TB"})
        with pytest.raises(DatabaseUnavailable) as refused:
            database.start_embedded(too_large)
        message = str(refused.value)
        assert message.startswith('the embedded PostgreSQL did not start: invalid value for parameter "shared_buffers"')
        assert "\n" not in message
        with psycopg.connect(database.start_embedded(settings)) as conn:
            assert conn.execute("SHOW shared_buffers").fetchone() == ("160MB",)
            assert conn.execute("SELECT count(*) FROM pg_database WHERE datname = 'pgrecall'").fetchone() == (1,)
        conf = (database.pgdata_path(settings) / "postgresql.conf").read_text()
        assert conf.count(database.SERVER_SETTINGS_FILE) == 1  # included once, however many starts
    finally:
        database.stop_embedded(settings)
