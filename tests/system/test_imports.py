"""What importing the read side loads, checked in a fresh interpreter: none of the write path."""

import subprocess
import sys


def test_search_side_does_not_import_the_write_path():
    code = (
        "import sys, pgrecall.api, pgrecall.api.searcher;"
        "bad = sorted(m for m in sys.modules if m.startswith(('pgrecall.worker', 'procrastinate', 'watchdog')));"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_status_module_imports_nothing_of_the_worker():
    code = (
        "import sys, pgrecall.status, pgrecall.api.searcher; "
        "print(sorted(m for m in sys.modules if m.startswith('pgrecall.worker')))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert result.stdout.strip() == "[]"


def test_logging_and_the_search_side_start_without_rich_which_still_imports_after():
    # structlog would import rich (about a tenth of a second of every command's start) to
    # pretty-print tracebacks that our renderers never ask for.
    code = (
        "import sys, pgrecall.logs; pgrecall.logs.configure_logging(); import pgrecall.api.searcher;"
        "print('rich' in sys.modules);"
        "import rich.progress; print('rich' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert result.stdout.split() == ["False", "True"]
