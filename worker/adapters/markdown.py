"""Markdown: YAML front matter into metadata, text split at headings (not inside code fences)."""

from __future__ import annotations

import datetime
import math
import re
from pathlib import PurePosixPath
from typing import Any

import yaml

from pgrecall import kinds
from pgrecall.worker.document import ParsedDocument, Section

_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.DOTALL)
# The closing hashes are stripped in code: `(.*?)[ \t#]*$` backtracks quadratically on long lines.
_ATX_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*)$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


MAX_FRONT_MATTER_DEPTH = 20
MAX_FRONT_MATTER_BYTES = 64 * 1024


def split_front_matter(text: str) -> tuple[dict[str, Any], str]:
    """(metadata, body). Metadata is bounded: YAML aliases can make a few hundred
    bytes expand to megabytes, fetched with every search hit, and nesting can be
    deep enough to exhaust the stack."""
    match = _FRONT_MATTER.match(text)
    if not match:
        return {}, text
    try:
        loaded = yaml.safe_load(match.group(1))
    except yaml.YAMLError as exc:
        raise ValueError(f"invalid YAML front matter: {str(exc).splitlines()[0]}") from None
    except RecursionError:
        raise ValueError("front matter nested too deeply") from None
    if loaded is None:
        loaded = {}
    if not isinstance(loaded, dict):
        raise ValueError("front matter is not a mapping of keys to values")
    budget = [MAX_FRONT_MATTER_BYTES]
    metadata = _jsonable(loaded, 0, budget)
    return metadata, text[match.end() :]


def _spend(budget: list[int], amount: int) -> None:
    budget[0] -= amount
    if budget[0] < 0:
        raise ValueError(f"front matter larger than {MAX_FRONT_MATTER_BYTES // 1024} KiB once parsed (YAML aliases?)")


def _jsonable(value: Any, depth: int, budget: list[int]) -> Any:
    """YAML gives dates and other types that JSON (and jsonb) lacks; NaN and
    infinities become text. Depth and expanded size are bounded (a JSON-sized
    estimate, counted while expanding, so an alias bomb stops early)."""
    if depth > MAX_FRONT_MATTER_DEPTH:
        raise ValueError(f"front matter nested deeper than {MAX_FRONT_MATTER_DEPTH} levels")
    if isinstance(value, dict):
        _spend(budget, 2)
        result = {}
        for k, v in value.items():
            key = k if isinstance(k, str) else str(_jsonable(k, depth + 1, budget))
            _spend(budget, len(key) + 4)
            result[key] = _jsonable(v, depth + 1, budget)
        return result
    if isinstance(value, (list, tuple, set, frozenset)):
        _spend(budget, 2)
        return [_jsonable(v, depth + 1, budget) for v in value]
    if isinstance(value, (datetime.date, datetime.datetime)):
        _spend(budget, 32)
        return value.isoformat()
    if isinstance(value, float) and not math.isfinite(value):
        _spend(budget, 8)
        return str(value)
    if value is None or isinstance(value, (bool, int, float)):
        _spend(budget, 8)
        return value
    text = value if isinstance(value, str) else str(value)
    _spend(budget, len(text) + 2)
    return text


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
            title = heading.group(2).rstrip(" \t#").strip()
            stack = [entry for entry in stack if entry[0] < level] + [(level, title)]
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
        kind=kinds.MARKDOWN,
        title=title or first_h1 or PurePosixPath(path).stem,
        content_hash=digest,
        sections=sections,
        metadata=metadata,
    )
