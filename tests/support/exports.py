"""Data exports as downloaded: zip files built at run time from tests/fixtures/claude_export."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
CLAUDE_EXPORT = FIXTURES / "claude_export"


def fixture(name: str) -> Any:
    """A fresh copy of one JSON file of the claude.ai export fixture (or `chatgpt/conversations.json`)."""
    return json.loads((FIXTURES / name if "/" in name else CLAUDE_EXPORT / name).read_text(encoding="utf-8"))


def write_zip(path: Path, entries: dict[str, Any], compression: int = zipfile.ZIP_DEFLATED) -> Path:
    """A zip of `entries` (name -> bytes, text, or a value written as JSON)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", compression=compression) as archive:
        for name, value in entries.items():
            data = value if isinstance(value, bytes | str) else json.dumps(value, ensure_ascii=False)
            archive.writestr(name, data)
    return path


def claude_export_zip(path: Path, conversations: list[dict] | None = None, projects: list[dict] | None = None) -> Path:
    """A claude.ai export as the download names it: conversations.json, projects.json and
    users.json at the top of the zip (the fixture's unless given)."""
    return write_zip(
        path,
        {
            "conversations.json": fixture("conversations.json") if conversations is None else conversations,
            "projects.json": fixture("projects.json") if projects is None else projects,
            "users.json": fixture("users.json"),
        },
    )
