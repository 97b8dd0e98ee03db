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


def test_the_model_loads_with_the_network_closed_and_leaves_the_environment_alone():
    import subprocess
    import sys

    script = """
import os, socket
def refuse(*args, **kwargs):
    raise OSError("network used")
socket.socket.connect = refuse
socket.create_connection = refuse
before = dict(os.environ)
from pgrecall.embedding import Embedder
vectors = Embedder().embed_batch(["offline"])
assert vectors.shape == (1, 384), vectors.shape
added = {key for key in os.environ if key not in before}
assert not {key for key in added if key.startswith(("HF_", "TRANSFORMERS_"))}, added  # torch adds its own
print("ok")
"""
    env = {
        key: value for key, value in __import__("os").environ.items() if not key.startswith(("HF_", "TRANSFORMERS_"))
    }
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().endswith("ok")
