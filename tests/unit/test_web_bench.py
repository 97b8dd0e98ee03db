"""bench/web_bench.py's arguments: its own home, or an index that exists (--eval HOME, --database URL)."""

from __future__ import annotations

import pytest
from psycopg.conninfo import conninfo_to_dict

from tests.support.bench import web_bench

ENVIRON = {
    "PATH": "/usr/bin",
    "PGRECALL_MODEL_CACHE": "/models",
    "PGRECALL_DATABASE_URL": "postgresql://someone@elsewhere/notes",
    "PGRECALL_SEARCH_DATABASE_URL": "postgresql://replica/notes",
    "PGRECALL_API_TOKEN": "s3cret",
}


def test_by_default_the_bench_builds_and_serves_its_own_home_whatever_the_environment(tmp_path):
    args, plan = web_bench.plan(["--home", str(tmp_path / "h")], ENVIRON)
    assert plan.build and not plan.existing and plan.eval_dataset is None
    assert plan.env["PGRECALL_HOME"] == str((tmp_path / "h").resolve())
    assert not {"PGRECALL_DATABASE_URL", "PGRECALL_SEARCH_DATABASE_URL", "PGRECALL_API_TOKEN"} & set(plan.env)
    assert plan.env["PGRECALL_MODEL_CACHE"] == "/models" and plan.env["PATH"] == "/usr/bin"
    assert plan.env["PGRECALL_EDITOR_COMMAND"] == "xdg-open {path}"  # never run: the screenshot shows the button
    _, reused = web_bench.plan(["--home", str(tmp_path / "h"), "--reuse"], ENVIRON)
    assert not reused.build and not reused.existing  # its own home, served writable (the memory form's screenshot)


def test_eval_serves_the_eval_database_of_the_datasets_name_in_that_home(tmp_path):
    args, plan = web_bench.plan(["--eval", str(tmp_path / "eval-home"), "--dataset", "/data/SciFact"], ENVIRON)
    assert plan.existing and not plan.build and plan.eval_dataset == "SciFact"
    assert plan.env["PGRECALL_HOME"] == str((tmp_path / "eval-home").resolve())
    assert "PGRECALL_EDITOR_COMMAND" not in plan.env
    assert "PGRECALL_DATABASE_URL" not in plan.env  # known once the home's server runs (served_url)
    own = "user=postgres dbname=pgrecall host=/tmp/eval-home/pgdata"
    served = conninfo_to_dict(web_bench.with_database(own, web_bench.eval_database_name(plan.eval_dataset)))
    assert served == {"user": "postgres", "dbname": "pgrecall_eval_scifact", "host": "/tmp/eval-home/pgdata"}


def test_database_serves_that_url_as_it_is():
    _, plan = web_bench.plan(["--database", "postgresql://me@db.local/notes"], ENVIRON)
    assert plan.existing and not plan.build and plan.eval_dataset is None
    assert web_bench.served_url(plan) == "postgresql://me@db.local/notes"  # no server started for it
    assert "PGRECALL_SEARCH_DATABASE_URL" not in plan.env  # the reader role of that database, not the caller's


def test_with_database_renames_the_database_of_a_uri():
    assert conninfo_to_dict(web_bench.with_database("postgresql://me@db.local:5433/notes", "other")) == {
        "user": "me",
        "host": "db.local",
        "port": "5433",
        "dbname": "other",
    }


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--eval", "/h", "--database", "postgresql:///x"], "not allowed with argument"),
        (["--eval", "/h", "--screenshots", "docs"], "--screenshots needs the bench's own home"),
        (["--database", "postgresql:///x", "--reuse"], "--reuse is for the bench's own home"),
        (["--queries", "0"], "--queries must be at least 1"),
    ],
)
def test_combinations_that_cannot_run_are_one_line_errors(argv, says, capsys):
    with pytest.raises(SystemExit) as exited:
        web_bench.plan(argv, ENVIRON)
    assert exited.value.code == 2 and says in capsys.readouterr().err
