"""`pgrecall eval FILE.json` as a user runs it: a LoCoMo file is told from a BEIR folder by its content."""

import json

import psycopg
from psycopg import sql

from tests.support.cli import cli_env as environment
from tests.support.cli import run_cli as pgrecall
from tests.support.locomo import write_locomo

UNREACHABLE = "postgresql://nobody@/nodb?host=/nonexistent"


def test_eval_of_a_locomo_file_reports_recalls_per_scope_and_category(cli_env, db_url, tmp_path):
    path = write_locomo(tmp_path / "cli-locomo.json")
    try:
        result = pgrecall("eval", str(path), "--mode", "keyword", "--json", env=cli_env)
        assert result.returncode == 0, result.stderr
        figures = json.loads(result.stdout)
        assert figures["format"] == "locomo" and figures["questions"] == 4
        keyword = figures["modes"]["keyword"]
        assert set(keyword) == {"within", "across"}
        assert keyword["within"]["all"]["turn@5"] == 0.625 and keyword["within"]["3"]["budget@25"] == 0.0
        table = pgrecall("eval", str(path), "--mode", "keyword", "--scope", "within", env=cli_env)
        assert table.returncode == 0, table.stderr
        assert "within its conversation" in table.stdout and "across" not in table.stdout
        assert "1 strings split, 1 repaired; skipped: 1 malformed, 1 naming no turn, 2 questions" in table.stdout
    finally:
        with psycopg.connect(db_url, autocommit=True) as conn:
            name = sql.Identifier("pgrecall_eval_cli-locomo")
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(name))


def test_a_json_file_that_is_not_locomo_is_one_line(tmp_path):
    """Refused before any connection."""
    path = tmp_path / "other.json"
    path.write_text(json.dumps([{"chat_messages": []}]))
    result = pgrecall("eval", str(path), env=environment(UNREACHABLE, tmp_path / "home"))
    assert result.returncode == 1
    assert result.stderr.strip() == (
        f"pgrecall: error: {path}: not a LoCoMo file (a JSON list of objects with conversation and qa)"
    )
