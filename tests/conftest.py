"""Fixtures: a real PostgreSQL (embedded, or PGRECALL_TEST_DATABASE_URL) and the real model.

The schema is migrated once per session into a template database; each test
that needs the database gets its own copy (CREATE DATABASE ... TEMPLATE).
"""

from __future__ import annotations

import asyncio
import itertools
import os
import shutil
import tempfile
import uuid
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from pgrecall import database
from pgrecall.embedding import embedder_for
from pgrecall.migrate import migrate
from pgrecall.settings import Settings, load_settings

TEMPLATE = "pgrecall_test_template"
# Every test has a home of its own; the ONNX files exported from the model are shared by all
# of them (and by the processes they start), as PGRECALL_MODEL_CACHE allows, instead of one
# export per home. Kept between runs: each file is checked against the weights' checksum.
os.environ.setdefault("PGRECALL_MODEL_CACHE", str(Path(tempfile.gettempdir()) / "pgrecall-test-models"))
_counter = itertools.count()


def _with_database(url: str, name: str) -> str:
    return psycopg.conninfo.make_conninfo(url, dbname=name)


@pytest.fixture(scope="session")
def embedded_server_settings():
    """Settings of the session's embedded server; None when tests use PGRECALL_TEST_DATABASE_URL."""
    if os.environ.get("PGRECALL_TEST_DATABASE_URL"):
        yield None
        return
    home = Path(tempfile.mkdtemp(prefix="pgrecall-test-"))
    settings = load_settings({"PGRECALL_HOME": str(home)})
    try:
        yield settings
    finally:
        database.stop_embedded(settings)
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="session")
def server_url(embedded_server_settings):
    """Admin URL of a PostgreSQL server with pgvector, started for the session if embedded."""
    if embedded_server_settings is None:
        return os.environ["PGRECALL_TEST_DATABASE_URL"]
    return database.start_embedded(embedded_server_settings)


@pytest.fixture(scope="session")
def template_url(server_url):
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(TEMPLATE)))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(TEMPLATE)))
    url = _with_database(server_url, TEMPLATE)
    with database.connect(url) as conn:
        migrate(conn)
    return url


@pytest.fixture
def db_url(server_url, template_url):
    """A freshly migrated database of this test's own."""
    name = f"pgrecall_test_{os.getpid()}_{next(_counter)}"
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(sql.Identifier(name), sql.Identifier(TEMPLATE)))
    yield _with_database(server_url, name)
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


@pytest.fixture
def empty_db_url(server_url):
    """A database with nothing in it, not even the extension."""
    name = f"pgrecall_empty_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    yield _with_database(server_url, name)
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


@pytest.fixture(autouse=True)
def isolated_home(tmp_path, monkeypatch):
    """No test touches the user's data directory or a configured server."""
    monkeypatch.setenv("PGRECALL_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("PGRECALL_DATABASE_URL", raising=False)


@pytest.fixture(scope="session")
def embedder():
    return embedder_for(load_settings())


@pytest.fixture
def settings(tmp_path) -> Settings:
    return load_settings({"PGRECALL_HOME": str(tmp_path / "home"), "PGRECALL_WORKERS": "8"})


@pytest.fixture
def index(settings, db_url):
    """index(*paths) -> IndexSummary, through the real queue and workers."""
    from pgrecall.worker.run import run_index

    def run(*paths):
        return asyncio.run(run_index(settings, db_url, [str(p) for p in paths]))

    return run


@pytest.fixture
def searcher(settings, db_url, embedder):
    from pgrecall.api.search import Searcher

    searcher = Searcher(db_url, settings, embedder=embedder, pool_size=2)
    yield searcher
    searcher.close()
