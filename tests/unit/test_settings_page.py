"""docs/settings.md is what docs/settings_page.py renders from the settings table, and covers it."""

import importlib.util
import re
from pathlib import Path

from pgrecall.settings import SETTINGS

ROOT = Path(__file__).resolve().parents[2]
GENERATOR = ROOT / "docs" / "settings_page.py"


def settings_page():
    spec = importlib.util.spec_from_file_location("settings_page", GENERATOR)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_settings_page_is_the_one_the_table_renders():
    page = settings_page()
    assert page.PAGE.read_text(encoding="utf-8") == page.render(), (
        "docs/settings.md is out of date: run .venv/bin/python docs/settings_page.py"
    )


def test_the_settings_page_lists_every_setting_with_its_default_and_what_it_accepts():
    page = settings_page()
    rows = {
        match.group(1): match.group(0)
        for match in re.finditer(r"^\| `(PGRECALL_[A-Z0-9_]+)` \|.*$", page.render(), re.MULTILINE)
    }
    assert list(rows) == [setting.variable for setting in SETTINGS]
    stalled = rows["PGRECALL_STALLED_SECONDS"]
    assert "| `30` | an integer, at least 2 |" in stalled
    assert "| `rrf` or `convex` |" in rows["PGRECALL_FUSION"]
    assert "a number from 0 to 1" in rows["PGRECALL_FUSION_ALPHA"]


def test_every_setting_the_page_explains_elsewhere_names_a_page_of_the_manual():
    page = settings_page()
    assert set(page.EXPLAINED_IN) <= {setting.variable for setting in SETTINGS}
    for target in page.EXPLAINED_IN.values():
        assert (GENERATOR.parent / target.split("#")[0]).is_file(), target
