"""What the Claude Code hooks injected, kept in files under PGRECALL_HOME/injections, and the switches
that turn injection off.

Files, not the database: a hook answered by a running serve's socket opens no connection, the search
side never writes, and a hook must never wait for a write. Each session has one append-only JSON
Lines file (`<session_id>.jsonl`, one record per hook run, written with one `write` on a file
opened with O_APPEND, so two hooks of one session never interleave a line) and, while injection is
off for it, an empty `<session_id>.off`. A project turns injection off with a file named
PROJECT_OFF in its folder (the hook's cwd or a folder above it, up to its git top-level).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pgrecall.projects import git_top_level

FOLDER = "injections"
PROJECT_OFF = ".pgrecall-off"
_SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")


def folder_of(home: Path) -> Path:
    return home / FOLDER


def _stem(session_id: str) -> str:
    """The session's file name without its extension: the id where it is a plain name (Claude Code's
    are UUIDs), else a digest of it, so that no id reaches outside the folder."""
    if _SAFE_ID.fullmatch(session_id) and ".." not in session_id:
        return session_id
    return "id-" + hashlib.sha256(session_id.encode()).hexdigest()[:32]


def session_file(folder: Path, session_id: str) -> Path:
    return folder / f"{_stem(session_id)}.jsonl"


def session_off(folder: Path, session_id: str | None) -> bool:
    return session_id is not None and (folder / f"{_stem(session_id)}.off").exists()


def switch_session(folder: Path, session_id: str, on: bool) -> None:
    """Injection on or off for the session from its next hook run."""
    marker = folder / f"{_stem(session_id)}.off"
    if on:
        marker.unlink(missing_ok=True)
        return
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    marker.touch()


def project_off(cwd: str | None) -> bool:
    """Whether a PROJECT_OFF file is in `cwd` or a folder above it, up to its git top-level (only
    `cwd` outside a git work tree)."""
    if not cwd or not os.path.isabs(cwd):
        return False
    here = Path(cwd)
    top = git_top_level(here) or here
    folders = [here, *(p for p in here.parents if p.is_relative_to(top))]
    return any((folder / PROJECT_OFF).is_file() for folder in folders)


def prompt_count(folder: Path, session_id: str) -> int:
    """How many prompt runs the session's file records."""
    try:
        with session_file(folder, session_id).open(encoding="utf-8") as lines:
            return sum('"event": "prompt"' in line for line in lines)
    except OSError:
        return 0


def append(folder: Path, record: dict[str, Any]) -> None:
    """One record on its session's file: one line, one write."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    line = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")
    descriptor = os.open(session_file(folder, record["session_id"]), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(descriptor, line)
    finally:
        os.close(descriptor)


def records(folder: Path) -> Iterator[dict[str, Any]]:
    """Every record of every session, file by file; lines that are not a JSON object are skipped
    (a record cut short by a full disk)."""
    if not folder.is_dir():
        return
    for path in sorted(folder.glob("*.jsonl")):
        with path.open(encoding="utf-8", errors="replace") as lines:
            for line in lines:
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if isinstance(record, dict) and isinstance(record.get("session_id"), str):
                    yield record


def transcript_lines(path: str) -> list[str] | None:
    """A session transcript's lines; None when it cannot be read (Claude Code deleted it)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as lines:
            return lines.readlines()
    except OSError:
        return None


def report_of(folder: Path) -> dict[str, Any]:
    """pgrecall.claude_integration.injection_use.report over the folder's records and their sessions' transcripts."""
    from pgrecall.claude_integration.injection_use import report

    kept = list(records(folder))
    paths = {r["transcript_path"] for r in kept if isinstance(r.get("transcript_path"), str)}
    return report(kept, {path: transcript_lines(path) for path in paths})
