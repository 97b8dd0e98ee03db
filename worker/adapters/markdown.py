"""Markdown: YAML front matter into metadata, text split at headings (not inside code fences)."""

from __future__ import annotations

import datetime
import re
from pathlib import PurePosixPath
from typing import Any

import yaml

from pgrecall.worker.document import ParsedDocument, Section

_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.DOTALL)
_ATX_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)[ \t#]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def split_front_matter(text: str) -> tuple[dict[str, Any], str]:
    match = _FRONT_MATTER.match(text)
    if not match:
        return {}, text
    try:
        loaded = yaml.safe_load(match.group(1))
    except yaml.YAMLError as exc:
        raise ValueError(f"invalid YAML front matter: {str(exc).splitlines()[0]}") from None
    if loaded is None:
        loaded = {}
    if not isinstance(loaded, dict):
        raise ValueError("front matter is not a mapping of keys to values")
    return _jsonable(loaded), text[match.end() :]


def _jsonable(value: Any) -> Any:
    """YAML gives dates and other types that JSON (and jsonb) lacks."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat()
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def split_sections(body: str) -> list[tuple[list[tuple[int, str]], str]]:
    """(heading stack, text) pairs; a stack is [(level, title), ...] outermost first."""
    sections: list[tuple[list[tuple[int, str]], str]] = []
    stack: list[tuple[int, str]] = []
    lines: list[str] = []
    fence: str | None = None
    for line in body.splitlines():
        fence_match = _FENCE.match(line)
        if fence_match:
            marker = fence_match.group(1)
            if fence is None:
                fence = marker
            elif marker[0] == fence[0] and len(marker) >= len(fence):
                fence = None
        heading = _ATX_HEADING.match(line) if fence is None and not fence_match else None
        if heading:
            sections.append((list(stack), "\n".join(lines)))
            lines = []
            level = len(heading.group(1))
            stack = [entry for entry in stack if entry[0] < level] + [(level, heading.group(2).strip())]
        else:
            lines.append(line)
    sections.append((list(stack), "\n".join(lines)))
    return sections


def heading_path(stack: list[tuple[int, str]]) -> str:
    return " > ".join(f"{'#' * level} {title}" for level, title in stack)


def parse(path: str, text: str, digest: str) -> ParsedDocument:
    metadata, body = split_front_matter(text)
    raw_sections = split_sections(body)
    sections = [
        Section(heading=heading_path(stack), text=section_text.strip())
        for stack, section_text in raw_sections
        if section_text.strip()
    ]
    first_h1 = next((stack[0][1] for stack, _ in raw_sections if stack and stack[0][0] == 1), None)
    title = metadata.get("title") if isinstance(metadata.get("title"), str) else None
    return ParsedDocument(
        path=path,
        kind="markdown",
        title=title or first_h1 or PurePosixPath(path).stem,
        content_hash=digest,
        sections=sections,
        metadata=metadata,
    )
