"""YAML front matter of a Markdown note, bounded: what the indexer and the memory notes both read."""

from __future__ import annotations

import datetime
import math
import re
from typing import Any

import yaml

_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.DOTALL)

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


def lenient_front_matter(text: str) -> tuple[dict[str, Any], str, str | None]:
    """(metadata, body, problem) for the indexer: front matter split_front_matter cannot read is
    kept as the body's text, with no metadata and the reason as `problem`, the way Obsidian still
    shows such a note; its words stay findable (a title with a colon is a common cause)."""
    try:
        metadata, body = split_front_matter(text)
    except ValueError as exc:
        return {}, text, str(exc)
    return metadata, body, None


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
