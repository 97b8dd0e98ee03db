"""How the benchmarks start pgrecall's processes: as a user's machine runs them, bytecode cached.

A Python that writes no bytecode (PYTHONDONTWRITEBYTECODE, set in some sandboxes and CI images)
compiles every pgrecall module from source at each start: tens of milliseconds that no installed
pgrecall pays, since Python caches the compiled modules at their first import (and pip compiles
a package it installs). A benchmark of process start-up measures the installed case.
"""

from __future__ import annotations

import subprocess

PACKAGES = ("pgrecall", "pgrecall.worker", "pgrecall.api", "pgrecall.cli")
_COMPILE = (
    "import compileall, importlib, sys; "
    "sys.exit(not all(compileall.compile_dir(importlib.import_module(name).__path__[0], quiet=1) "
    f"for name in {PACKAGES!r}))"
)


def as_installed(env: dict[str, str], python: str) -> dict[str, str]:
    """`env` without PYTHONDONTWRITEBYTECODE, once `python`'s pgrecall has its bytecode cached."""
    env = {name: value for name, value in env.items() if name != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([python, "-c", _COMPILE], env=env, check=True, timeout=300)
    return env
