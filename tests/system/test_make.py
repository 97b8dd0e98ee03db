"""`make test` on a fresh machine: it installs what the browser tests drive (issue 38, item 15)."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def make(*args: str) -> subprocess.CompletedProcess[str]:
    # -o: the venv counts as installed (the worktree's own), so that only the steps after it run.
    # As a user runs it, not as a sub-make of the `make test` that runs this suite: a make started
    # with its parent's MAKELEVEL and MAKEFLAGS prints "Entering directory" and takes its flags.
    env = {key: value for key, value in os.environ.items() if key not in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS")}
    return subprocess.run(
        ["make", "-o", ".venv/.installed", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def test_make_test_installs_chromium_and_playwright_never_a_downloaded_browser():
    planned = make("-n", "test")
    assert planned.returncode == 0, planned.stderr
    browser, _, tests = planned.stdout.partition("-m pytest")
    assert tests.strip() == "" and "-m pytest" in planned.stdout  # the install steps come first
    assert "command -v chromium" in browser and "apt-get install" in browser and "chromium" in browser
    assert 'pip install --quiet "playwright>=1.45"' in browser
    assert "playwright install" not in planned.stdout
    ci = (ROOT / ".ci" / "run").read_text()
    assert ci.rstrip().endswith("make test") and "playwright" not in ci and "apt-get install -y -qq" in ci


def test_the_browser_step_is_quiet_and_changes_nothing_when_both_are_there():
    pytest.importorskip("playwright", reason="Playwright for Python is not installed")
    if shutil.which("chromium") is None:
        pytest.skip("no chromium binary on PATH")
    done = make("browser")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "" and done.stderr == ""  # neither apt-get nor pip ran


def test_make_test_lints_first_and_the_tree_is_lint_clean():
    """Issue 41: ruff's linter and formatter run before the tests, so a lint error fails make test."""
    planned = make("-n", "test")
    assert planned.returncode == 0, planned.stderr
    before_tests = planned.stdout.partition("-m pytest")[0]
    assert "ruff check ." in before_tests and "ruff format --check ." in before_tests
    linted = make("lint")
    assert linted.returncode == 0, linted.stdout + linted.stderr
