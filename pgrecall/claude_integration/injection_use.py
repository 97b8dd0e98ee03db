"""Whether what a hook injected was used, and the report of cost and use: pure functions over the
records of pgrecall.claude_integration.injection_ledger and the lines of Claude Code's session transcripts.

The rule for "used": an injected item counts as used when, in an assistant message of the same
session written after the injection,
  1. a tool call names it: any argument holds its document id as the whole value (get_document's
     id_or_path), its memory id, or its path (get_document, Read, Edit on the file), or
  2. the text names it: its memory id, its path or its file's name, or
  3. the text reuses it: at least two of its distinctive terms (words of its title and injected text
     that are not in the prompt: identifiers such as E-4711 or export_ledger_batch, and words of 8
     letters or more), or one identifier of 5 characters or more with a digit or an underscore.
Limits: a term can reach the answer from elsewhere (the code, a file the assistant read, the
user's next prompt), so "used" is an upper bound at the level of words; an item used in other words
is missed; and used says nothing of whether it helped. Items whose session's transcript cannot be
read are counted as unknown, never as unused.
"""

from __future__ import annotations

import datetime
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pgrecall.iso_time import parse_time
from pgrecall.terms import identifier_terms

LONG_WORD = 8
MAX_TERMS = 16
_WORD = re.compile(r"[^\W\d_]{" + str(LONG_WORD) + ",}")


def distinctive_terms(text: str, prompt: str) -> list[str]:
    """The item's words that would show it was reused: identifiers and long words, lower case, in
    order, without those of the prompt."""
    asked = {w.lower() for w in _WORD.findall(prompt)} | set(identifier_terms(prompt))
    found = identifier_terms(text) + [w.lower() for w in _WORD.findall(text)]
    return [term for term in dict.fromkeys(found) if term not in asked][:MAX_TERMS]


def strong(term: str) -> bool:
    return len(term) >= 5 and any(c.isdigit() or c == "_" for c in term)


def assistant_turns(lines: Iterable[str]) -> list[tuple[datetime.datetime, str, list[str]]]:
    """The assistant's messages of a Claude Code transcript: (time, text, tool call arguments as
    strings), in order; lines that are not a timed assistant record are skipped."""
    turns = []
    for line in lines:
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if not isinstance(record, dict) or record.get("type") != "assistant":
            continue
        when = parse_time(record.get("timestamp"))
        message = record.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if when is None or content is None:
            continue
        texts: list[str] = []
        calls: list[str] = []
        for part in [content] if isinstance(content, str) else content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str):
                texts.append(part["text"])
            elif isinstance(part, dict) and part.get("type") == "tool_use" and isinstance(part.get("input"), dict):
                calls.extend(str(value) for value in part["input"].values())
        turns.append((when, "\n".join(texts), calls))
    return turns


def opens(argument: str, path: str) -> bool:
    """Whether a tool call's argument is the item's file: its path, or a path relative to a folder above it."""
    if not path or len(argument) < 6:
        return False
    return argument == path or path.endswith("/" + argument.lstrip("./"))


def use_of(item: Mapping[str, Any], turns: Sequence[tuple[datetime.datetime, str, list[str]]]) -> str | None:
    """How the assistant used the item in `turns` ("tool", "named" or "reused"), None when it did not."""
    ids = {str(item.get("document_id")), *(v for v in (item.get("memory_id"), item.get("path")) if v)}
    names = {v for v in (item.get("memory_id"), item.get("path")) if v}
    path = item.get("path") or ""
    file_name = path.rsplit("/", 1)[-1]
    if file_name and "." in file_name and len(file_name) >= 6:
        names.add(file_name)
    terms = [t for t in item.get("terms") or [] if isinstance(t, str)]
    if any(call in ids or opens(call, path) for _, _, calls in turns for call in calls):
        return "tool"
    text = "\n".join(said for _, said, _ in turns).lower()
    if any(name.lower() in text for name in names):
        return "named"
    present = [term for term in terms if term in text]
    if len(present) >= 2 or any(strong(term) for term in present):
        return "reused"
    return None


def used_items(record: Mapping[str, Any], transcript: Sequence[str] | None) -> list[str | None] | None:
    """Each injected item's use (use_of) by the assistant after the record's time; None when the
    transcript is not there."""
    if transcript is None:
        return None
    at = parse_time(record.get("at"))
    later = [turn for turn in assistant_turns(transcript) if at is None or turn[0] >= at]
    return [use_of(item, later) for item in record.get("items") or []]


def _tally() -> dict[str, Any]:
    return {
        "runs": 0,
        "injections": 0,
        "items": 0,
        "tokens": 0,
        "used": 0,
        "unknown": 0,
        "off": 0,
        "errors": 0,
        "seconds": [],
    }


def _add(tally: dict[str, Any], record: Mapping[str, Any], uses: list[str | None] | None) -> None:
    tally["runs"] += 1
    items = record.get("items") or []
    if record.get("outcome") == "injected":
        tally["injections"] += 1
        tally["items"] += len(items)
        tally["tokens"] += int(record.get("tokens") or 0)
        if uses is None:
            tally["unknown"] += len(items)
        else:
            tally["used"] += sum(use is not None for use in uses)
    tally["off"] += record.get("outcome") == "off"
    tally["errors"] += record.get("outcome") in ("error", "late")
    if isinstance(record.get("seconds"), int | float):
        tally["seconds"].append(float(record["seconds"]))


def _closed(tally: dict[str, Any]) -> dict[str, Any]:
    seconds = sorted(tally.pop("seconds"))
    known = tally["items"] - tally["unknown"]
    tally["used_share"] = round(tally["used"] / known, 3) if known else None
    tally["tokens_per_injection"] = round(tally["tokens"] / tally["injections"], 1) if tally["injections"] else None
    tally["p50_seconds"] = round(seconds[len(seconds) // 2], 3) if seconds else None
    tally["max_seconds"] = round(seconds[-1], 3) if seconds else None
    return tally


def report(records: Iterable[Mapping[str, Any]], transcripts: Mapping[str, Sequence[str] | None]) -> dict[str, Any]:
    """Hook runs, injections, items, tokens, latency and use, overall and per session, day and project.
    `transcripts`: each record's transcript_path -> its lines (None: not readable)."""
    overall = _tally()
    groups: dict[str, dict[str, dict[str, Any]]] = {"sessions": {}, "days": {}, "projects": {}}
    details: dict[str, dict[str, Any]] = {}
    for record in sorted(records, key=lambda r: str(r.get("at"))):
        path = record.get("transcript_path")
        uses = used_items(record, transcripts.get(path) if isinstance(path, str) else None)
        session = str(record.get("session_id"))
        keys = {
            "sessions": session,
            "days": str(record.get("at") or "")[:10] or "undated",
            "projects": str(record.get("project") or record.get("cwd") or "(none)"),
        }
        _add(overall, record, uses)
        for group, key in keys.items():
            _add(groups[group].setdefault(key, _tally()), record, uses)
        detail = details.setdefault(session, {"first": record.get("at"), "project": keys["projects"], "injected": []})
        detail["last"] = record.get("at")
        if record.get("outcome") == "injected":
            for at, item in enumerate(record.get("items") or []):
                use = uses[at] if uses is not None and at < len(uses) else None
                detail["injected"].append(
                    {
                        "prompt": record.get("prompt"),
                        "event": record.get("event"),
                        "document_id": item.get("document_id"),
                        "title": item.get("title"),
                        "used": use if uses is not None else "unknown",
                    }
                )
    sessions = []
    for session, tally in groups["sessions"].items():
        sessions.append({"session_id": session, **details[session], **_closed(tally)})
    sessions.sort(key=lambda s: str(s.get("last")), reverse=True)
    return {
        "overall": _closed(overall),
        "sessions": sessions,
        "days": [{"day": day, **_closed(t)} for day, t in sorted(groups["days"].items(), reverse=True)],
        "projects": [{"project": p, **_closed(t)} for p, t in sorted(groups["projects"].items())],
    }
