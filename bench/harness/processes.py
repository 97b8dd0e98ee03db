"""How the benchmarks start pgrecall's processes: as a user's machine runs them, bytecode cached,
each waited for until it is ready and stopped with the signal systemd sends.

A Python that writes no bytecode (PYTHONDONTWRITEBYTECODE, set in some sandboxes and CI images)
compiles every pgrecall module from source at each start: tens of milliseconds that no installed
pgrecall pays, since Python caches the compiled modules at their first import (and pip compiles
a package it installs). A benchmark of process start-up measures the installed case.
"""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

PACKAGES = ("pgrecall", "pgrecall.worker", "pgrecall.api", "pgrecall.cli")
COMPILE = (
    "import compileall, importlib, sys; "
    "sys.exit(not all(compileall.compile_dir(importlib.import_module(name).__path__[0], quiet=1) "
    f"for name in {PACKAGES!r}))"
)
# Asks serve's warm socket through the public client: 0 once serve is ready to search.
WARM_SOCKET_ANSWERS = (
    "import sys; from pgrecall import warm_client, settings; "
    "sys.exit(0 if warm_client.answers(settings.load_settings()) else 1)"
)
READY_TIMEOUT_S = 300.0


def as_installed(env: dict[str, str], python: str) -> dict[str, str]:
    """`env` without PYTHONDONTWRITEBYTECODE, once `python`'s pgrecall has its bytecode cached."""
    env = {name: value for name, value in env.items() if name != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([python, "-c", COMPILE], env=env, check=True, timeout=300)
    return env


def pgrecall_command(python: str) -> list[str]:
    """The CLI of `python`'s pgrecall, as the installed `pgrecall` script runs it."""
    return [python, "-m", "pgrecall.cli"]


def start(command: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    """`command` running, its output appended to `log`."""
    with open(log, "ab") as output:
        return subprocess.Popen(command, env=env, stdout=output, stderr=subprocess.STDOUT)


def wait_until(
    ready: Callable[[], bool], process: subprocess.Popen, what: str, timeout: float = READY_TIMEOUT_S
) -> None:
    """Until `ready()`, polled every half second; SystemExit if `process` ends or time runs out first."""
    deadline = time.monotonic() + timeout
    while not ready():
        if process.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"{what}: not ready")
        time.sleep(0.5)


def warm_socket_answers(python: str, env: dict[str, str]) -> bool:
    """True once serve's warm socket (in env's home) answers, asked from a process of `python`."""
    return subprocess.run([python, "-c", WARM_SOCKET_ANSWERS], env=env).returncode == 0


def stop(process: subprocess.Popen | None, timeout: float = 120) -> None:
    """SIGTERM, as systemd stops the service, and wait for the process to end."""
    if process is not None and process.poll() is None:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout)


def stop_database(pgrecall: list[str], env: dict[str, str]) -> None:
    """Stop the embedded server of env's home (`pgrecall db stop`), whatever state it is in."""
    subprocess.run([*pgrecall, "db", "stop"], env=env, capture_output=True, timeout=120)
