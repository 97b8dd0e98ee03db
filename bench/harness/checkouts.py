"""The checkouts a run compares: this one, and `--against CHECKOUT` (e.g. a git worktree of an
earlier commit), each measured through the pgrecall its own virtualenv installs."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


@dataclasses.dataclass(frozen=True)
class Checkout:
    side: str  # "this" or "against"
    root: Path
    python: str  # the interpreter whose pgrecall is this checkout's (its editable install)
    commit: str

    def describe(self) -> dict[str, str]:
        return {"root": str(self.root), "python": self.python, "commit": self.commit}


def commit_of(root: Path) -> str:
    done = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return done.stdout.strip() or "unknown"


def this_checkout() -> Checkout:
    return Checkout("this", REPO, sys.executable, commit_of(REPO))


def other_checkout(path: str | Path) -> Checkout:
    """The checkout at `path` with its own .venv (pgrecall installed there, as `make install` does)."""
    root = Path(path).expanduser().resolve()
    python = root / ".venv" / "bin" / "python"
    if not python.exists():
        raise SystemExit(f"{root}: no .venv/bin/python; run `make install` in that checkout first")
    return Checkout("against", root, str(python), commit_of(root))
