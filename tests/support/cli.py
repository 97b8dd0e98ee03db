"""The pgrecall CLI as a user runs it: `python -m pgrecall.cli` in a process of its own.

Every test that starts the CLI goes through `run_cli` (one command, waited for) or `start_cli`
(a long-lived one: serve, api, watch), or hands COMMAND to a client that starts it (the MCP SDK's). Without an `env`, the process gets the test's
environment, whose PGRECALL_HOME the autouse `isolated_home` fixture points at a temporary folder.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

COMMAND = (sys.executable, "-m", "pgrecall.cli")


def cli_env(db_url: str | None = None, home: str | Path | None = None, **extra: str) -> dict[str, str]:
    """The test's environment with JSON logs, the database URL and home if given, and `extra` on top."""
    env = dict(os.environ, PGRECALL_LOG_FORMAT="json")
    if db_url is not None:
        env["PGRECALL_DATABASE_URL"] = db_url
    if home is not None:
        env["PGRECALL_HOME"] = str(home)
    env.update(extra)
    return env


def run_cli(
    *args: str, env: dict[str, str] | None = None, input: str | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """`pgrecall *args` to its end: exit code, stdout and stderr as text; stdin is `input` or empty."""
    return subprocess.run(
        [*COMMAND, *args],
        env=os.environ.copy() if env is None else env,
        input=input,
        stdin=subprocess.DEVNULL if input is None else None,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def start_cli(*args: str, env: dict[str, str] | None = None, **popen) -> subprocess.Popen:
    """`pgrecall *args` in the background; `popen` as for subprocess.Popen (stdin empty unless given)."""
    popen.setdefault("stdin", subprocess.DEVNULL)
    return subprocess.Popen([*COMMAND, *args], env=os.environ.copy() if env is None else env, **popen)
