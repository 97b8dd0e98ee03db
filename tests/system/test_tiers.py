"""The tiers of tests/conftest.py, run on a small suite of their own: markers and timeouts by
folder, and a unit test that reaches for the database or a process fails at once.

A system test itself, so that no guard of the outer run stands in for the inner run's."""

from pathlib import Path

import pytest

CONFTEST = Path(__file__).resolve().parents[1] / "conftest.py"


@pytest.fixture
def suite(pytester):
    pytester.makeconftest(CONFTEST.read_text(encoding="utf-8"))
    pytester.makeini("[pytest]\nmarkers =\n    unit\n    integration\n    system\n    slow\n")
    for tier in ("unit", "integration", "system"):
        (pytester.path / tier).mkdir()
    return pytester


def _write(suite, relative: str, text: str) -> None:
    (suite.path / relative).write_text(text, encoding="utf-8")


TIMEOUT_OF = """
import pytest

def test_timeout(request):
    print("TIMEOUT", request.node.get_closest_marker("timeout").args[0])

@pytest.mark.slow
def test_slow_timeout(request):
    print("TIMEOUT", request.node.get_closest_marker("timeout").args[0])

@pytest.mark.timeout(7)
def test_own_timeout(request):
    print("TIMEOUT", request.node.get_closest_marker("timeout").args[0])
"""


def test_each_folder_is_a_marker_with_its_timeout_and_a_tests_own_timeout_wins(suite):
    for tier in ("unit", "integration", "system"):
        _write(suite, f"{tier}/test_{tier}_timeouts.py", TIMEOUT_OF)
    result = suite.runpytest_inprocess("-s", "-q", "-m", "unit or integration or system")
    result.assert_outcomes(passed=9)
    timeouts = [line.split("TIMEOUT ")[1] for line in result.outlines if "TIMEOUT " in line]
    assert timeouts == ["180", "300", "7", "300", "300", "7", "30", "300", "7"]  # integration, system, unit
    assert suite.runpytest_inprocess("-q", "-m", "unit").parseoutcomes() == {"passed": 3, "deselected": 6}


def test_a_unit_test_that_asks_for_the_database_fails_before_any_server_starts(suite):
    _write(suite, "unit/test_wrong_tier.py", "def test_wants_a_database(db_url):\n    pass\n")
    result = suite.runpytest_inprocess("-q")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*a unit test must not use the database: move it to tests/integration*"])


def test_a_unit_test_that_starts_a_process_fails(suite):
    _write(suite, "unit/test_process.py", "import subprocess\n\ndef test_runs():\n    subprocess.run(['true'])\n")
    _write(
        suite, "system/test_system_process.py", "import subprocess\n\ndef test_runs():\n    subprocess.run(['true'])\n"
    )
    result = suite.runpytest_inprocess("-q", "-rf")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["a unit test must not start a process: move it to tests/integration or tests/system"])
    assert result.outlines[-2].startswith("FAILED unit/test_process.py::test_runs")
