"""Claude Code hooks, the pure part: read the hook's JSON, decide what is relevant, write it within a budget.

Claude Code runs `pgrecall hook prompt` (UserPromptSubmit) and `pgrecall hook session-start`
(SessionStart) with the event's JSON on stdin; what they print on stdout (exit 0) is added to
the assistant's context as it is. Nothing here touches the database, the model or a stream:
pgrecall.cli.hook_commands does, through one seam each, and calls these functions.

Tokens are estimated at 4 characters each (`estimate_tokens`): no tokenizer is loaded, so the
estimate costs nothing and stays the same when the hits come from another process.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import math
import re
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
MERGED_CHARS = 360  # the snippets of one document's passages, joined
LINK_ONLY_WORDS = 6  # a passage with at most this many words besides its links only points elsewhere
PROMPT_HEADER = "pgrecall, possibly relevant (get_document(id) returns an item in full):"
# The prompts that turn injection off and on for the session (the slash commands' names, raw or as a
# plugin's, and the first line of the command files in pgrecall/claude_integration/claude_commands).
SWITCH_OFF = ("/pgrecall-off", "/pgrecall:off", "pgrecall injections: off")
SWITCH_ON = ("/pgrecall-on", "/pgrecall:on", "pgrecall injections: on")


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


def switch_of(prompt: str) -> bool | None:
    """False for a prompt that turns injection off for the session, True for one that turns it back
    on, None for any other: its first line is one of SWITCH_OFF or SWITCH_ON, in any case."""
    lines = prompt.strip().splitlines()
    first = " ".join(lines[0].split()).lower() if lines else ""
    if first in SWITCH_OFF:
        return False
    if first in SWITCH_ON:
        return True
    return None


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
    kind: str = "markdown"  # the document's kind: markdown, claude_code_session, chatgpt_conversation, ...
    when: datetime.datetime | None = None  # the document's own time (occurred_at, else its file's mtime)
    text: str = ""  # the passage's whole text: a passage of links only is told by it


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
    model cannot tell E-4711 from E-4712, so their similarity says little), in order."""
    return [p for p in passages if p.similarity >= min_similarity or p.exact]


@dataclasses.dataclass(frozen=True)
class Item:
    """What the prompt hook shows of one document: its passages' snippets, joined, under one line
    of provenance."""

    first: Passage  # the best ranked of its passages: its title, path, kind and time
    snippets: tuple[str, ...]


_WIKILINK = re.compile(r"\[\[([^\]|#]+)(?:#[^\]|]*)?(?:\|[^\]]*)?\]\]")
_MARKDOWN_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
_HEADING = re.compile(r"^\s*#{1,6}\s.*$", re.MULTILINE)
_WORD = re.compile(r"[^\W\d_][\w'-]*")


def link_targets(text: str) -> list[str]:
    """The notes `text` links to ([[Title]], [[file#part|alias]], [text](file.md)), as lower-case
    names (a title, or a file's name without its folder and extension)."""
    wiki = [target.strip() for target in _WIKILINK.findall(text)]
    files = [target.rsplit("/", 1)[-1].rsplit(".", 1)[0] for target in _MARKDOWN_LINK.findall(text)]
    return [name.lower() for name in wiki + files if name]


def only_links(text: str) -> bool:
    """Whether `text` mostly points at other notes: a link or more, and at most LINK_ONLY_WORDS words
    besides them (headings, such as a daily note's date, left out)."""
    if not link_targets(text):
        return False
    rest = _MARKDOWN_LINK.sub(" ", _WIKILINK.sub(" ", _HEADING.sub(" ", text)))
    return len(_WORD.findall(rest)) <= LINK_ONLY_WORDS


def names_of(passage: Passage) -> set[str]:
    """The names a link to the passage's document may use: its title, its file's name."""
    stem = passage.path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    return {name.lower() for name in (passage.title, stem) if name}


def items_of(passages: Sequence[Passage]) -> list[Item]:
    """The passages as items: one per document, in the order of its best passage, its snippets
    joined (pgrecall.api.passages already joins consecutive chunks; this joins the rest); a passage
    that only links to other notes is left out where a note it links to is shown, and kept once
    for all the link-only passages that point at the same notes."""
    by_document: dict[int, list[Passage]] = {}
    for passage in passages:
        by_document.setdefault(passage.document_id, []).append(passage)
    shown_names = {
        name for group in by_document.values() if not only_links(group[0].text) for name in names_of(group[0])
    }
    items: list[Item] = []
    pointed: set[frozenset[str]] = set()
    for group in by_document.values():
        first = group[0]
        if only_links(first.text):
            targets = frozenset(link_targets(first.text))
            if targets & shown_names or targets in pointed:
                continue
            pointed.add(targets)
        items.append(Item(first, tuple(dict.fromkeys(p.snippet for p in group))))
    return items


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


def _letters(text: str) -> str:
    return "".join(c for c in text.lower() if c.isalnum())


def repeats(title: str, text: str) -> bool:
    """Whether a title only repeats the start of the text (a memory's title is made of it), whatever
    its punctuation and whether either was cut short."""
    head, body = _letters(title.rstrip("…")), _letters(text.lstrip("…"))
    return bool(head) and body.startswith(head[:80])


def shown_path(path: str, cwd: str | None) -> str:
    """A file's path as the assistant opens it: relative to its cwd when inside it, else absolute."""
    folder = (cwd or "").rstrip("/")
    if folder and path.startswith(folder + "/"):
        return path[len(folder) + 1 :]
    return path


KIND_WORDS = {
    "claude_code_session": "session",
    "claude_conversation": "conversation",
    "chatgpt_conversation": "conversation",
    "claude_project": "project document",
}


def provenance(passage: Passage, text: str, cwd: str | None) -> str:
    """The item's one line: what it is (title), where (a file's path only where the assistant
    would open the file: not for a memory, a session or a conversation, which get_document shows)
    and when, then the id get_document takes. A title that only repeats the text's start is left out."""
    day = passage.when.date().isoformat() if passage.when else None
    title = _one_line(passage.title, 120) if passage.title else None
    if title and repeats(title, text):
        title = None
    if passage.memory_id:
        where = f"memory {passage.memory_id}"
    elif passage.kind in KIND_WORDS:
        where = KIND_WORDS[passage.kind]
    else:
        where = shown_path(passage.path, cwd)
    facts = ", ".join(part for part in (where, day) if part)
    return f"- {title + ': ' if title else ''}{facts} (id {passage.document_id})"


def item_entry(item: Item, cwd: str | None = None) -> str:
    text = _one_line(" … ".join(_one_line(s, SNIPPET_CHARS) for s in item.snippets), MERGED_CHARS)
    return f"{provenance(item.first, text, cwd)}\n  {text}"


def passage_entry(passage: Passage, cwd: str | None = None) -> str:
    return item_entry(Item(passage, (passage.snippet,)), cwd)


def prompt_context(passages: Sequence[Passage], budget: int, cwd: str | None = None) -> str:
    """What the prompt hook prints: the relevant passages as items within `budget` tokens; "" for none."""
    return _within(PROMPT_HEADER, [item_entry(item, cwd) for item in items_of(passages)], None, budget)


def shown_items(passages: Sequence[Passage], budget: int, cwd: str | None = None) -> list[Item]:
    """The items prompt_context shows: the first ones whose entries fit in the budget."""
    items = items_of(passages)
    text = prompt_context(passages, budget, cwd)
    return [item for item in items if item_entry(item, cwd) in text]


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
        label = f"memory {item.memory_id}" if item.memory_id else "memory"
        text = _one_line(item.text, SNIPPET_CHARS)
        if not text or repeats(name, text):
            return f"- {day} {label} (id {item.document_id})" + (f": {text}" if text else f": {name}")
        return f"- {day} {name}: {label} (id {item.document_id})\n  {text}"
    return f"- {day} session: {name} (id {item.document_id})"


def briefing(items: Sequence[Recent], budget: int, cwd: str | None) -> str:
    """What the session-start hook prints: recent memories, then recent sessions, newest first
    within each, within `budget` tokens; "" when there is nothing."""
    if not items:
        return ""
    newest = sorted(items, key=lambda i: i.when or datetime.datetime.min.replace(tzinfo=datetime.UTC), reverse=True)
    ordered = [i for i in newest if i.kind == "memory"] + [i for i in newest if i.kind != "memory"]
    where = f" for {cwd}" if cwd else ""
    header = f"pgrecall: recent memories and sessions{where}, newest first (get_document(id) returns one in full):"
    return _within(header, [recent_entry(i) for i in ordered], None, budget)
