"""`pgrecall index` as a user runs it reports chunks embedded and reused apart."""

import json
import re

from tests.notes import write_notes
from tests.support.cli import run_cli as pgrecall

SECTIONS = [f"## Day {n}\n\nThe pump on line {n} was inspected and its seal replaced after a leak." for n in range(8)]


def test_index_reports_chunks_embedded_and_reused(cli_env, tmp_path):
    root = write_notes(tmp_path / "notes", {"log.md": "# Log\n\n" + "\n\n".join(SECTIONS)})
    first = pgrecall("index", str(root), "--json", env=cli_env)
    assert first.returncode == 0, first.stderr
    summary = json.loads(first.stdout)
    assert (summary["chunks_embedded"], summary["chunks_reused"]) == (summary["chunks"], 0)

    with (root / "log.md").open("a") as file:
        file.write("\n\n## Day 8\n\nA new valve was fitted to the cooling loop.\n")
    second = pgrecall("index", str(root), env=cli_env)
    assert second.returncode == 0, second.stderr
    shown = re.search(r"(\d+) chunks in .*, (\d+) chunks embedded, (\d+) reused", second.stdout)
    assert shown, second.stdout
    chunks, embedded, reused = map(int, shown.groups())
    assert (embedded, reused) == (1, summary["chunks"]) and chunks == summary["chunks"] + 1
