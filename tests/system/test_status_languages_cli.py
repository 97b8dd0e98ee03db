"""`pgrecall status` tells which languages the index holds and which of them the model cannot read,
with the command that adds one that can (issue 40: the bundled model stays the default)."""

from __future__ import annotations

from tests.notes import write_notes
from tests.support.cli import run_cli as pgrecall

NOTES = {
    "bike.md": "# Bike\n\nReplace the chain every few thousand kilometres and oil it after rain.",
    "garden.md": "# Garden\n\nTomatoes ripen faster in the sun; water them in the morning.",
    "heizung.md": "# Heizung\n\nDie Heizkörper im Keller werden jeden Herbst entlüftet, sonst gluckern sie.",
}


def test_status_names_the_languages_the_bundled_model_cannot_read(cli_env, tmp_path):
    assert pgrecall("index", str(write_notes(tmp_path / "notes", NOTES)), env=cli_env).returncode == 0
    shown = pgrecall("status", env=cli_env)
    assert shown.returncode == 0, shown.stderr
    assert "languages:  english 2, german 1 documents" in shown.stdout
    hint = next(line for line in shown.stdout.splitlines() if "does not read" in line)
    assert "german" in hint and "english" not in hint and "pgrecall models add multilingual-e5-small" in hint
