"""A PGRECALL_HOME of its own holding examples/notes, for the benchmarks that run pgrecall as
subprocesses beside `serve` (warm_bench, mcp_memory_bench)."""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

from processes import as_installed

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "notes"


def indexed_home(python: str, home: str | None, prefix: str) -> tuple[Path, dict[str, str], list[str]]:
    """(home, environment, the pgrecall command of `python`) with examples/notes indexed in `home`
    (a new temporary folder when None). The working directory becomes the home: `python -m`
    imports from it first, and it must never be a checkout's, so `python` measures its own install."""
    folder = Path(home) if home else Path(tempfile.mkdtemp(prefix=prefix))
    env = dict(
        os.environ, PGRECALL_HOME=str(folder), PGRECALL_LOG_FORMAT="json", PGRECALL_CONFIG=str(folder / "none.toml")
    )
    for name in ("PGRECALL_DATABASE_URL", "PGRECALL_SEARCH_DATABASE_URL", "PGRECALL_WARM_SOCKET"):
        env.pop(name, None)
    env = as_installed(env, python)
    folder.mkdir(parents=True, exist_ok=True)
    os.chdir(folder)
    pgrecall = [python, "-m", "pgrecall.cli"]
    subprocess.run([*pgrecall, "index", "--quiet", str(EXAMPLES)], env=env, check=True, timeout=900)
    return folder, env, pgrecall
