"""What the adapters produce and the chunker consumes."""

from __future__ import annotations

import dataclasses
import datetime
from typing import Any


@dataclasses.dataclass(frozen=True)
class Section:
    """A stretch of text under one heading path, e.g. "# Setup > ## Linux"."""

    heading: str
    text: str
    # text[:context] repeats the end of the section before, as context (a conversation's
    # message before an exchange): its first chunk marks it as a repeat (Chunk.fresh_from), so a
    # passage joining the two shows it once.
    context: int = 0


@dataclasses.dataclass(frozen=True)
class ParsedDocument:
    path: str  # relative to the source root; "export.json#<uuid>" for a conversation
    kind: str
    title: str
    content_hash: str
    sections: list[Section]
    metadata: dict[str, Any] = dataclasses.field(default_factory=dict)
    redactions: dict[str, int] = dataclasses.field(default_factory=dict)  # secrets replaced, by kind
    # The project it names itself (a front-matter project, a session's cwd, a claude.ai project's
    # name), as given: the store normalises it (pgrecall.projects.project_of). None: its root's, if any.
    project: str | None = None
    # Its own time: a note's created, a conversation's or session's last message. None: the
    # file's modification time stands in.
    occurred_at: datetime.datetime | None = None
    # What was read another way than the file meant, one line each (front matter that is not
    # YAML, kept as text): logged as file_warning, the document indexed all the same.
    warnings: tuple[str, ...] = ()


def moment(value: Any) -> datetime.datetime | None:
    """A time as documents write it (ISO 8601, "Z" for UTC; a YAML date or datetime), aware
    (UTC where it names no offset); None for anything else."""
    if isinstance(value, datetime.datetime):
        parsed = value
    elif isinstance(value, datetime.date):
        parsed = datetime.datetime.combine(value, datetime.time())
    elif isinstance(value, str) and value.strip():
        try:
            parsed = datetime.datetime.fromisoformat(value.strip())
        except ValueError:
            return None
    else:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=datetime.UTC)


def latest(values: Any) -> datetime.datetime | None:
    """The latest of the times among `values` that parse (moment), else None."""
    times = [parsed for value in values if (parsed := moment(value)) is not None]
    return max(times) if times else None


def named(value: Any) -> str | None:
    """A project as a document names it: a string of one line, else None."""
    if not isinstance(value, str) or not value.strip() or "\n" in value:
        return None
    return value.strip()


@dataclasses.dataclass(frozen=True)
class Chunk:
    ordinal: int
    heading: str
    text: str
    token_count: int
    fresh_from: int = 0  # text[:fresh_from] repeats the end of the previous chunk (the overlap)
    section_key: str = ""  # the section it was cut from (chunk.section_key): an unchanged section is not cut again

    @property
    def embedding_text(self) -> str:
        """What the model sees: the heading path gives context. (The keyword index
        sees keyword_text, which leaves out the overlap.)"""
        return embedding_text(self.heading, self.text)

    def keyword_text(self, with_heading: bool, whole: bool = False) -> str:
        """What the keyword index counts: each word of a document once, so no overlap, and the
        heading only where `with_heading` (the first chunk of its section). `whole`: the repeat
        too, for a conversation's unit, whose context is part of what it means, as for the model
        (LoCoMo dev, within, budget@5: 0.480 with the context left out, 0.543 with it)."""
        fresh = self.text if whole else self.text[self.fresh_from :]
        return f"{self.heading}\n\n{fresh}" if with_heading and self.heading else fresh


def embedding_text(heading: str, text: str) -> str:
    """A chunk's embedding text from its heading path and text, as stored in pgrecall.chunks."""
    return f"{heading}\n\n{text}" if heading else text
