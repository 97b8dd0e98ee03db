"""Secrets through the CLI as a user runs it: `pgrecall search` finds none of them in any mode,
`pgrecall status` counts them, and the JSON log of `pgrecall -v index` holds kinds and counts only."""

import json

from tests.notes import write_notes
from tests.support.cli import run_cli as pgrecall
from tests.support.secrets import planted


def test_search_finds_no_planted_secret_in_any_mode_and_status_counts_them(cli_env, tmp_path):
    secrets = planted(7)
    note = "# Credentials we once pasted\n\n" + "\n\n".join(secret.line for secret in secrets) + "\n"
    root = write_notes(tmp_path / "notes", {"ops/keys.md": note})
    indexed = pgrecall("-v", "index", str(root), env=cli_env)
    assert indexed.returncode == 0, indexed.stderr
    parts = [part for secret in secrets for part in secret.parts]
    assert not [part for part in parts if part in indexed.stdout + indexed.stderr]
    logged = [json.loads(line) for line in indexed.stderr.splitlines() if line.startswith("{")]
    (event,) = [line for line in logged if line["event"] == "secrets_redacted"]
    assert (event["path"], event["count"]) == ("ops/keys.md", len(secrets))

    # Every secret by keyword; a few by meaning too (tests/integration/test_redaction.py searches
    # every part of every secret in every mode, in process).
    searches = [("keyword", secret) for secret in secrets]
    searches += [(mode, secret) for mode in ("vector", "hybrid") for secret in secrets[::8]]
    for mode, secret in searches:
        found = pgrecall("search", secret.secret, "--mode", mode, "-k", "5", "--json", env=cli_env)
        assert found.returncode == 0, found.stderr
        assert {hit["path"] for hit in json.loads(found.stdout)} <= {"ops/keys.md"}
        assert not [part for part in parts if part in found.stdout], (mode, secret.kind)

    state = json.loads(pgrecall("status", "--json", env=cli_env).stdout)
    assert state["redactions"]["secrets"] == len(secrets) and state["redactions"]["documents"] == 1
    shown = pgrecall("status", env=cli_env).stdout
    assert (
        f"redacted:   {len(secrets)} secrets in 1 documents (anthropic api key: 1, aws access key: 2, github token: 3, "
        in shown
    )
