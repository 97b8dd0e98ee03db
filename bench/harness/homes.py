"""A PGRECALL_HOME per run: its own data directory, embedded database and log format, no settings
of the machine's (config file, database URLs, warm socket) leaking in."""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

from .processes import as_installed, pgrecall_command

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "notes"
# What points a pgrecall process elsewhere than its home: left out of every bench's environment.
MACHINE_SETTINGS = ("PGRECALL_DATABASE_URL", "PGRECALL_SEARCH_DATABASE_URL", "PGRECALL_WARM_SOCKET")


def machine_environment(keep: tuple[str, ...] = (), prefixes: tuple[str, ...] = ("PGRECALL_",)) -> dict[str, str]:
    """os.environ without any of pgrecall's settings (the variables starting with `prefixes`) but `keep`:
    a bench then sets the few it measures with."""
    return {name: value for name, value in os.environ.items() if not name.startswith(prefixes) or name in keep}


def home_environment(home: Path, base: dict[str, str] | None = None) -> dict[str, str]:
    """`base` (default os.environ) with `home` as PGRECALL_HOME, JSON logs and no config file."""
    env = dict(os.environ if base is None else base)
    env.update(PGRECALL_HOME=str(home), PGRECALL_LOG_FORMAT="json", PGRECALL_CONFIG=str(home / "none.toml"))
    for name in MACHINE_SETTINGS:
        env.pop(name, None)
    return env


def new_home(home: str | Path | None, prefix: str) -> Path:
    """`home` (made if missing), or a new temporary folder named with `prefix`."""
    folder = Path(home) if home else Path(tempfile.mkdtemp(prefix=prefix))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def indexed_home(python: str, home: str | None, prefix: str) -> tuple[Path, dict[str, str], list[str]]:
    """(home, environment, the pgrecall command of `python`) with examples/notes indexed in `home`
    (a new temporary folder when None). The working directory becomes the home: `python -m`
    imports from it first, and it must never be a checkout's, so `python` measures its own install."""
    folder = new_home(home, prefix)
    env = as_installed(home_environment(folder), python)
    os.chdir(folder)
    pgrecall = pgrecall_command(python)
    subprocess.run([*pgrecall, "index", "--quiet", str(EXAMPLES)], env=env, check=True, timeout=900)
    return folder, env, pgrecall
