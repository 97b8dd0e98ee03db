"""Claude Code hooks, the pure part: read the hook's JSON, decide what is relevant, write it within a budget.

Claude Code runs `pgrecall hook prompt` (UserPromptSubmit) and `pgrecall hook session-start`
(SessionStart) with the event's JSON on stdin; what they print on stdout (exit 0) is added to
the assistant's context as it is. Nothing here touches the database, the model or a stream:
pgrecall.cli.hook does, through one seam each, and calls these functions.

Tokens are estimated at 4 characters each (`estimate_tokens`): no tokenizer is loaded, so the
estimate costs nothing and stays the same when the hits come from another process.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import math
from collections.abc import Iterable, Sequence
from typing import Any

from pgrecall.contract import MEMORY_ID
from pgrecall.errors import InvalidInput
from pgrecall.terms import identifier_terms

PROMPT = "UserPromptSubmit"
SESSION_START = "SessionStart"
MIN_PROMPT_CHARS = 8  # "yes", "go on", "thanks!" are never searched
CHARS_PER_TOKEN = 4
SNIPPET_CHARS = 240
GET_DOCUMENT_HINT = "(pgrecall: the MCP tool get_document(document_id) returns any of these in full.)"


@dataclasses.dataclass(frozen=True)
class HookInput:
    """The fields of a hook's JSON that the hooks use; the others are ignored."""

    event: str  # hook_event_name
    session_id: str | None = None
    cwd: str | None = None
    transcript_path: str | None = None
    prompt: str | None = None  # UserPromptSubmit
    source: str | None = None  # SessionStart: startup, resume, clear or compact


def _text_field(data: dict[str, Any], name: str) -> str | None:
    value = data.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInput(f"the hook's {name} must be a string")
    return value


def parse_payload(text: str, event: str) -> HookInput:
    """The hook JSON on stdin, for `event` (PROMPT or SESSION_START); InvalidInput in one line otherwise."""
    if not text.strip():
        raise InvalidInput("no hook JSON on stdin")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"the hook JSON on stdin is not JSON: {exc.msg} at line {exc.lineno}") from None
    if not isinstance(data, dict):
        raise InvalidInput("the hook JSON on stdin is not an object")
    named = _text_field(data, "hook_event_name")
    if named is not None and named != event:
        raise InvalidInput(f"this hook is for {event} events, got {named}")
    parsed = HookInput(
        event=event,
        session_id=_text_field(data, "session_id"),
        cwd=_text_field(data, "cwd"),
        transcript_path=_text_field(data, "transcript_path"),
        prompt=_text_field(data, "prompt"),
        source=_text_field(data, "source"),
    )
    if event == PROMPT and parsed.prompt is None:
        raise InvalidInput("the UserPromptSubmit JSON has no prompt")
    return parsed


def worth_searching(prompt: str) -> bool:
    """False for what no note answers: slash commands, and prompts too short to mean a topic
    unless they name an identifier ("E-4711" is short and exact)."""
    text = prompt.strip()
    if text.startswith("/"):
        return False
    return len(text) >= MIN_PROMPT_CHARS or bool(identifier_terms(text))


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


@dataclasses.dataclass(frozen=True)
class Passage:
    """A hit as the prompt hook sees it: where it is, what it says, and how close it is to the prompt."""

    document_id: int
    path: str  # absolute where the document is a file of a root
    title: str | None
    snippet: str
    memory_id: str | None
    similarity: float  # cosine similarity of the passage's vector with the prompt's (the vector arm's raw score)
    exact: bool = False  # the passage holds an identifier the prompt names (E-4711, config.toml, v2.1)


def memory_id_of(metadata: dict[str, Any]) -> str | None:
    """The front matter's id where the document is a memory note (12 hexadecimal digits)."""
    value = metadata.get("id")
    return value if isinstance(value, str) and MEMORY_ID.fullmatch(value) else None


def full_path(source_root: str, path: str) -> str:
    return path if path.startswith("/") or not source_root else f"{source_root.rstrip('/')}/{path}"


def names_identifier(text: str, identifiers: Iterable[str]) -> bool:
    """Whether `text` holds one of the prompt's identifiers (pgrecall.terms.identifier_terms, lower case)."""
    lowered = text.lower()
    return any(identifier in lowered for identifier in identifiers)


def relevant(passages: Iterable[Passage], min_similarity: float) -> list[Passage]:
    """The passages at or above the threshold, or holding an identifier the prompt names (a dense
    model cannot tell E-4711 from E-4712, so their similarity says little), one per document (its
    first, the best ranked), in order."""
    kept: list[Passage] = []
    seen: set[int] = set()
    for passage in passages:
        if (passage.similarity >= min_similarity or passage.exact) and passage.document_id not in seen:
            seen.add(passage.document_id)
            kept.append(passage)
    return kept


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _within(header: str, entries: Sequence[str], footer: str | None, budget: int) -> str:
    """The header, as many entries as fit in `budget` tokens (in order), and the footer; "" when none fits."""
    lines = [header]
    used = estimate_tokens(header) + (estimate_tokens(footer) if footer else 0)
    kept = 0
    for entry in entries:
        cost = estimate_tokens(entry) + 1  # its line break
        if used + cost > budget:
            break
        lines.append(entry)
        used += cost
        kept += 1
    if not kept:
        return ""
    if footer:
        lines.append(footer)
    return "\n".join(lines) + "\n"


def passage_entry(passage: Passage) -> str:
    name = _one_line(passage.title, 120) if passage.title else passage.path.rsplit("/", 1)[-1]
    ids = f"document_id {passage.document_id}" + (f", memory {passage.memory_id}" if passage.memory_id else "")
    return f"- {name} ({ids}; {passage.path})\n  {_one_line(passage.snippet, SNIPPET_CHARS)}"


def prompt_context(passages: Sequence[Passage], budget: int) -> str:
    """What the prompt hook prints: the relevant passages within `budget` tokens; "" for none."""
    if not passages:
        return ""
    header = "Possibly relevant, from pgrecall (the user's notes, memories and past sessions):"
    return _within(header, [passage_entry(p) for p in passages], GET_DOCUMENT_HINT, budget)


@dataclasses.dataclass(frozen=True)
class Recent:
    """A recent memory or Claude Code session, as the session-start briefing lists it."""

    document_id: int
    kind: str  # "memory" or "session"
    path: str
    title: str | None
    memory_id: str | None
    when: datetime.datetime | None
    text: str  # a memory's text (its first passage); "" for a session


def recent_entry(item: Recent) -> str:
    day = item.when.date().isoformat() if item.when else "undated"
    name = _one_line(item.title, 120) if item.title else item.path.rsplit("/", 1)[-1]
    if item.kind == "memory":
        ids = f"memory {item.memory_id}, document_id {item.document_id}" if item.memory_id else ""
        ids = ids or f"document_id {item.document_id}"
        text = _one_line(item.text, SNIPPET_CHARS)
        return f"- {day} {name} ({ids}; {item.path})" + (f"\n  {text}" if text and text != name else "")
    return f"- {day} session: {name} (document_id {item.document_id}; {item.path})"


def briefing(items: Sequence[Recent], budget: int, cwd: str | None) -> str:
    """What the session-start hook prints: recent memories, then recent sessions, newest first
    within each, within `budget` tokens; "" when there is nothing."""
    if not items:
        return ""
    newest = sorted(items, key=lambda i: i.when or datetime.datetime.min.replace(tzinfo=datetime.UTC), reverse=True)
    ordered = [i for i in newest if i.kind == "memory"] + [i for i in newest if i.kind != "memory"]
    where = f" for {cwd}" if cwd else ""
    header = f"pgrecall: recent memories and sessions{where}, newest first:"
    return _within(header, [recent_entry(i) for i in ordered], GET_DOCUMENT_HINT, budget)
