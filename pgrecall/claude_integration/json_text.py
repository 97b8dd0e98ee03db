"""JSON text edited in place: what did not change keeps its bytes (a user's compact arrays, its spacing).

`edited_text(original, data)` is `original` with only the values that differ from `data` written
again: members and items added, removed or changed, each new value in the style of the container
it goes in (indented as its siblings, or on one line in a one-line container). A change this
cannot place (members reordered, duplicate keys) writes that one container again, whole.
"""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any

_SPACE = re.compile(r"[ \t\n\r]*")
_LINE_SPACE = re.compile(r"[ \t]*")
_DECODER = json.JSONDecoder()


@dataclasses.dataclass(frozen=True)
class _Node:
    start: int
    end: int
    children: tuple[_Child, ...] = ()
    opening: str = ""  # "{" or "[" for a container, "" for a scalar


@dataclasses.dataclass(frozen=True)
class _Child:
    key: str | None  # an object member's key; None for an array item
    start: int  # where the member's key (or the item) starts
    key_end: int  # where its key ends (the item's start for an array item)
    value: _Node


def _skip(text: str, at: int) -> int:
    return _SPACE.match(text, at).end()


def _parse(text: str, at: int) -> _Node:
    """The value at `at` (space before it skipped) of a text json.loads accepted, with its children's spans."""
    at = _skip(text, at)
    opening = text[at]
    if opening not in "{[":
        _, end = _DECODER.raw_decode(text, at)
        return _Node(at, end)
    closing = "}" if opening == "{" else "]"
    children = []
    position = _skip(text, at + 1)
    while text[position] != closing:
        key, start = None, position
        if opening == "{":
            key, position = _DECODER.raw_decode(text, position)
            key_end = position
            position = _skip(text, position) + 1  # past the colon
        else:
            key_end = position
        value = _parse(text, position)
        children.append(_Child(key, start, key_end, value))
        position = _skip(text, value.end)
        if text[position] == ",":
            position = _skip(text, position + 1)
    return _Node(at, position + 1, tuple(children), opening)


def same(a: Any, b: Any) -> bool:
    """Equal as JSON text: of one type (1 is neither true nor 1.0), members in the same order."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[key], b[key]) for key in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


@dataclasses.dataclass(frozen=True)
class _Style:
    indent: str  # one level of indentation, as the file has it
    ensure_ascii: bool


def _dumps(value: Any, style: _Style, line_indent: str | None) -> str:
    """`value` on one line (line_indent None), else indented as json.dumps does, under a line
    indented by `line_indent`."""
    if line_indent is None:
        return json.dumps(value, ensure_ascii=style.ensure_ascii)
    text = json.dumps(value, indent=style.indent, ensure_ascii=style.ensure_ascii)
    return text.replace("\n", "\n" + line_indent)


def _line_indent(text: str, at: int) -> str:
    """The spaces and tabs that start the line `at` is on."""
    line_start = text.rfind("\n", 0, at) + 1
    return text[line_start : _LINE_SPACE.match(text, line_start).end()]


def _kept(old: list[tuple[Any, Any]], new: list[tuple[Any, Any]], by_key: bool) -> list[int | None] | None:
    """For each (key, value) of `new`, the index of the old one it keeps (None: added), when `new`
    is `old` with some removed and others added after them; else None. Members are kept by key
    (their values may change), items only when the same."""
    if by_key:
        old_keys = [key for key, _ in old]
        kept = [old_keys.index(key) if key in old_keys else None for key, _ in new]
    else:
        kept, cursor = [], 0
        for _, item in new:
            while cursor < len(old) and not same(old[cursor][1], item):
                cursor += 1
            kept.append(cursor if cursor < len(old) else None)
            cursor += 1
    first_added = kept.index(None) if None in kept else len(kept)
    ordered = kept[:first_added]
    if ordered != sorted(ordered) or any(index is not None for index in kept[first_added:]):
        return None
    return kept


def _container(text: str, node: _Node, old: Any, new: Any, style: _Style, line_indent: str | None) -> str:
    by_key = node.opening == "{"
    closing = "}" if by_key else "]"
    old_items = list(old.items()) if by_key else list(enumerate(old))
    new_items = list(new.items()) if by_key else list(enumerate(new))
    if by_key and [child.key for child in node.children] != list(old):
        kept: list[int | None] | None = None  # a key written twice: which one json.loads kept is not placed
    elif not by_key and len(old) == len(new):
        kept = list(range(len(new)))  # item by item, each in its place
    else:
        kept = _kept(old_items, new_items, by_key)
    if kept is None:  # written again whole, on one line if it was
        return _dumps(new, style, line_indent if "\n" in text[node.start : node.end] else None)
    if not new_items:
        return node.opening + closing
    children = node.children
    if children:
        lead = text[node.start + 1 : children[0].start]
        trail = text[children[-1].value.end : node.end - 1]
        separators = [text[a.value.end : b.start] for a, b in zip(children, children[1:], strict=False)]
        child_indent = _line_indent(text, children[0].start) if "\n" in lead else None
        colon = text[children[0].key_end : children[0].value.start] if by_key else ""
    else:  # its first members, as json.dumps writes them
        child_indent = None if line_indent is None else line_indent + style.indent
        lead = "" if child_indent is None else "\n" + child_indent
        trail = "" if line_indent is None else "\n" + line_indent
        separators, colon = [], ": "
    usual_separator = separators[-1] if separators else ("," + lead if child_indent is not None else ", ")
    parts = []
    for position, ((key, value), index) in enumerate(zip(new_items, kept, strict=True)):
        if position:
            previous = kept[position - 1]
            after_previous = previous is not None and previous < len(separators)
            parts.append(separators[previous] if after_previous else usual_separator)
        if index is None:
            head = json.dumps(key, ensure_ascii=style.ensure_ascii) + colon if by_key else ""
            parts.append(head + _dumps(value, style, child_indent))
        else:
            child = children[index]
            head = text[child.start : child.value.start]
            parts.append(head + _value(text, child.value, old_items[index][1], value, style, child_indent))
    return node.opening + lead + "".join(parts) + trail + closing


def _value(text: str, node: _Node, old: Any, new: Any, style: _Style, line_indent: str | None) -> str:
    """The text of `new` where `old` was written at `node`; `line_indent` None inside a one-line container."""
    if same(old, new):
        return text[node.start : node.end]
    if (node.opening == "{" and isinstance(new, dict)) or (node.opening == "[" and isinstance(new, list)):
        return _container(text, node, old, new, style, line_indent)
    return _dumps(new, style, line_indent)


def edited_text(original: str, data: Any, indent: str = "  ", ensure_ascii: bool = False) -> str:
    """`original` (JSON text) made to hold `data`, what is unchanged byte for byte; new values
    indented by `indent` per level and escaped as `ensure_ascii` says."""
    root = _parse(original, 0)
    body = _value(original, root, json.loads(original), data, _Style(indent, ensure_ascii), "")
    return original[: root.start] + body + original[root.end :]
