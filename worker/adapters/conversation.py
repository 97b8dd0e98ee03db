"""A conversation's messages as the sections the chunker cuts: the one place every conversation
source (claude.ai and ChatGPT exports, Claude Code sessions) makes its retrieval units.

A unit is an exchange: the person's message with every reply up to their next message, after
the message before it as context (its last CONTEXT_WORDS words at most), so a hit on a question carries
its answer, and a question that says "it" carries what "it" was. Each message is a paragraph
"[8 May 2023] Speaker: text", the date written where it differs from the paragraph before (a
unit's first always has it, where the message has a time), so a hit says who said it and when.
The date is in words, as people ask ("what did we decide in May?"): both arms match the month's
name, which an ISO date does not hold. The context is marked (Section.context), so the keyword
index counts its words once, in its own unit, and a passage joining two units shows it once.
Chosen by measurement on LoCoMo's development half against single messages, bare exchanges
and windows of 3 or 4 turns (README, "pgrecall eval FILE.json").
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Sequence

from pgrecall.worker.document import Section

CONTEXT_WORDS = 60


@dataclasses.dataclass(frozen=True)
class Message:
    speaker: str  # as shown: "User", "Claude", or a name
    text: str
    when: datetime.datetime | None = None
    opens: bool = False  # the person's message: an exchange starts here


def _context(message: Message) -> Message:
    """The message before an exchange, cut to its last paragraphs of CONTEXT_WORDS words in all,
    or the last CONTEXT_WORDS words of its last paragraph."""
    paragraphs = message.text.split("\n\n")
    kept: list[str] = []
    words = 0
    for paragraph in reversed(paragraphs):
        words += len(paragraph.split())
        if words > CONTEXT_WORDS:
            break
        kept.insert(0, paragraph)
    if len(kept) == len(paragraphs):
        return message
    text = "\n\n".join(kept) if kept else " ".join(paragraphs[-1].split()[-CONTEXT_WORDS:])
    return dataclasses.replace(message, text=f"… {text}")


def spoken_date(moment: datetime.datetime) -> str:
    """A message's date as people write and ask it: "8 May 2023" (English month names, any locale)."""
    return f"{moment.day} {MONTHS[moment.month - 1]} {moment.year}"


MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip


def _paragraphs(messages: Sequence[Message]) -> list[str]:
    paragraphs: list[str] = []
    previous: str | None = None
    for message in messages:
        date = spoken_date(message.when) if message.when else None
        prefix = f"[{date}] " if date and date != previous else ""
        previous = date or previous
        paragraphs.append(f"{prefix}{message.speaker}: {message.text}")
    return paragraphs


def exchanges(messages: Sequence[Message]) -> list[list[Message]]:
    """Each exchange's messages, the one before it first (as context); messages without text left out."""
    groups: list[list[Message]] = []
    for message in (m for m in messages if m.text.strip()):
        if message.opens or not groups:
            groups.append([message])
        else:
            groups[-1].append(message)
    return [([_context(groups[n - 1][-1])] if n else []) + group for n, group in enumerate(groups)]


def sections(heading: str, messages: Sequence[Message]) -> list[Section]:
    """The retrieval units of one conversation, each a section under `heading` (its title)."""
    units: list[Section] = []
    for number, unit in enumerate(exchanges(messages)):
        paragraphs = _paragraphs(unit)
        context = len(paragraphs[0]) + 2 if number and len(paragraphs) > 1 else 0
        units.append(Section(heading=heading, text="\n\n".join(paragraphs), context=context))
    return units
