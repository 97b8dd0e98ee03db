"""A document's project: one normalised name, whoever gives it (a hook's cwd, an MCP client's
roots, `--project`, a note's front matter, a Claude Code session's cwd, a claude.ai project).

An absolute path is resolved and taken up to the top of its git work tree, so a memory saved
from `~/work/apollo/api` and a session started in `~/work/apollo` share one project. A bare
name ("apollo", a claude.ai project's name) stays as it is. Only the file system is read
(a `.git` folder, or the `.git` file of a worktree or submodule); git itself is never run.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import unquote, urlparse

MAX_PROJECT_CHARS = 500


def git_top_level(path: Path) -> Path | None:
    """The nearest folder at or above `path` holding a `.git` (folder or file), else None."""
    for folder in (path, *path.parents):
        if (folder / ".git").exists():
            return folder
    return None


def project_of(path_or_name: str) -> str:
    """The project `path_or_name` names: an absolute path (or `~/...`, or a file:// URI) as its
    git top-level, else as the resolved path; anything else, stripped, as a name."""
    value = path_or_name.strip()
    if value.startswith("file://"):
        value = unquote(urlparse(value).path)
    if value.startswith("~"):
        value = os.path.expanduser(value)
    if not os.path.isabs(value):
        return value
    path = Path(value).resolve()
    return str(git_top_level(path) or path)


def folder_name(project: str) -> str | None:
    """The name a note's front matter gives a project that is a path (`project: apollo` for
    ~/code/apollo): its folder's name; None for a bare name."""
    if not project.startswith("/"):
        return None
    return project.rstrip("/").rsplit("/", 1)[-1] or None
