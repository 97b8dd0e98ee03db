"""The log lines a service writes to its journal (JSON, not a terminal): a logged exception keeps its
traceback, from our events and from the standard library's records (Procrastinate's) alike."""

import json
import subprocess
import sys

import pytest

LOG_AN_EXCEPTION = """
import logging, sys
import structlog
from pgrecall.logs import configure_logging

configure_logging(logging.INFO, "json")
try:
    {}["missing-key"]
except KeyError:
    if sys.argv[1] == "structlog":
        structlog.get_logger("pgrecall.worker.pipeline").exception("job_failed", path="a.md")
    else:
        logging.getLogger("procrastinate.worker").exception("Job failed")
"""


@pytest.mark.parametrize("logger", ["structlog", "standard-library"])
def test_a_logged_exception_keeps_its_traceback_in_the_json_line(logger):
    result = subprocess.run(
        [sys.executable, "-c", LOG_AN_EXCEPTION, logger], capture_output=True, text=True, timeout=120, check=True
    )
    (line,) = [json.loads(text) for text in result.stderr.splitlines()]
    assert line["level"] == "error"
    assert line["exception"].startswith("Traceback (most recent call last)")
    assert line["exception"].endswith("KeyError: 'missing-key'")
    assert "exc_info" not in line
