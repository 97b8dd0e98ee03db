"""The CLI across embedding spaces: search refuses another space, status reports it, reembed fixes it."""

from __future__ import annotations

import json

import psycopg

from tests.notes import ERROR_CODE_NOTES, write_notes
from tests.support.cli import run_cli as pgrecall

OTHER = "another-model@sha256:000000000000/384/torch"
NOTES = {
    **ERROR_CODE_NOTES,
    "notes/kettle.md": "# Kettle\n\nDescale the kettle with citric acid every month.",
    "notes/bikes.md": "# Bikes\n\nThe chain needs oil after riding in the rain.",
}


def execute(url: str, query: str, params=()) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(query, params)


def test_cli_refuses_reports_and_reembeds(cli_env, db_url, tmp_path):
    root = write_notes(tmp_path / "notes", NOTES)
    assert pgrecall("index", str(root), "--json", env=cli_env).returncode == 0
    execute(db_url, "UPDATE pgrecall.documents SET embedding_space = %s WHERE path = 'notes/bikes.md'", (OTHER,))

    shown = pgrecall("status", env=cli_env)
    assert shown.returncode == 0, shown.stderr
    assert "reembed:    1 documents of another embedding space" in shown.stdout

    execute(db_url, "UPDATE pgrecall.documents SET embedding_space = %s", (OTHER,))
    refused = pgrecall("search", "kettle", env=cli_env)
    assert refused.returncode != 0
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and OTHER in lines[0] and "pgrecall reembed" in lines[0], refused.stderr
    keyword = pgrecall("search", "E-4711", "--mode", "keyword", "--json", env=cli_env)
    assert keyword.returncode == 0 and json.loads(keyword.stdout)[0]["path"] == "incidents/e4711.md"

    reembedded = pgrecall("reembed", "--json", env=cli_env)
    assert reembedded.returncode == 0, reembedded.stderr
    assert json.loads(reembedded.stdout)["indexed"] == len(NOTES)
    found = pgrecall("search", "descale the kettle", "--json", env=cli_env)
    assert found.returncode == 0 and json.loads(found.stdout)[0]["path"] == "notes/kettle.md"
