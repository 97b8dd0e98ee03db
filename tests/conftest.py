"""Fixtures: a real PostgreSQL (embedded, or PGRECALL_TEST_DATABASE_URL) and the real model.

The schema is migrated once per session into a template database; each test
that needs the database gets its own copy (CREATE DATABASE ... TEMPLATE).

Tests come in tiers by folder: unit (no database, no model, no process), integration
(the database and the model, in this process), system (processes started by the test).
Each tier is a marker of the same name with a timeout of its own.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from pgrecall.embedders.embedder_base import LocalEmbedder
from pgrecall.embedders.embedding import embedder_for
from pgrecall.postgres import database
from pgrecall.postgres.migrator import migrate
from pgrecall.settings import Settings, load_settings

pytest_plugins = ["pytester"]  # tests/system/test_tiers.py runs a suite of its own

TEMPLATE = "pgrecall_test_template"
# Every test has a home of its own; the ONNX files exported from the model are shared by all
# of them (and by the processes they start), as PGRECALL_MODEL_CACHE allows, instead of one
# export per home. Kept between runs: each file is checked against the weights' checksum.
os.environ.setdefault("PGRECALL_MODEL_CACHE", str(Path(tempfile.gettempdir()) / "pgrecall-test-models"))
_counter = itertools.count()

TIERS = {"unit": 30, "integration": 180, "system": 300}  # tier: seconds a test may take, setup included
SLOW = 300  # seconds for a test marked slow, in any tier (the bound every test had before tiers)
_running_tier: str | None = None  # the tier of the test being set up or run


def tier_of(item: pytest.Item) -> str | None:
    """The tier folder a test is in (tests/<tier>/...), None outside them."""
    here = Path(__file__).parent
    parts = item.path.relative_to(here).parts if item.path.is_relative_to(here) else ()
    return parts[0] if len(parts) > 1 and parts[0] in TIERS else None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        tier = tier_of(item)
        if tier is None:
            continue
        item.add_marker(tier)
        if item.get_closest_marker("timeout") is None:  # a test's own timeout wins
            item.add_marker(pytest.mark.timeout(SLOW if item.get_closest_marker("slow") else TIERS[tier]))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    global _running_tier
    _running_tier = tier_of(item)
    if _running_tier == "unit" and "server_url" in item.fixturenames:
        pytest.fail("a unit test must not use the database: move it to tests/integration", pytrace=False)


def _refused_in_unit_tier(what: str):
    def refuse(*args, **kwargs):
        pytest.fail(f"a unit test must not {what}: move it to tests/integration or tests/system", pytrace=False)

    return refuse


@pytest.fixture(autouse=True)
def unit_tier_guard(request, monkeypatch):
    """A unit test that loads the model or starts a process fails at once instead of being slow."""
    if tier_of(request.node) != "unit":
        return
    monkeypatch.setattr(LocalEmbedder, "_loaded_model", _refused_in_unit_tier("load the model"))
    monkeypatch.setattr(subprocess.Popen, "__init__", _refused_in_unit_tier("start a process"))


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
    if _running_tier == "unit":
        pytest.fail("a unit test must not use the database: move it to tests/integration", pytrace=False)
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


@pytest.fixture
def cli_env(db_url, tmp_path):
    """The environment of a CLI process on this test's database and home (tests.support.cli)."""
    from tests.support.cli import cli_env

    return cli_env(db_url, tmp_path / "home")


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
    from pgrecall.api.searcher import Searcher

    searcher = Searcher(db_url, settings, embedder=embedder, pool_size=2)
    yield searcher
    searcher.close()


@pytest.fixture
def memory_folder(tmp_path):
    """The memory folder of a test's own memory service (empty; a test module may give its own)."""
    return tmp_path / "memories"


@pytest.fixture
def memories(settings, db_url, memory_folder):
    """The memory client (pgrecall.worker.memory.writer.MemoryClient) on this test's database."""
    from pgrecall.worker.memory.writer import MemoryClient

    with MemoryClient(settings, db_url, memory_folder) as client:
        yield client
