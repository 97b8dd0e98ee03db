"""What the adapters produce and the chunker consumes."""

from __future__ import annotations

import dataclasses
from typing import Any


@dataclasses.dataclass(frozen=True)
class Section:
    """A stretch of text under one heading path, e.g. "# Setup > ## Linux"."""

    heading: str
    text: str


@dataclasses.dataclass(frozen=True)
class ParsedDocument:
    path: str  # relative to the source root; "export.json#<uuid>" for a conversation
    kind: str
    title: str
    content_hash: str
    sections: list[Section]
    metadata: dict[str, Any] = dataclasses.field(default_factory=dict)
    redactions: dict[str, int] = dataclasses.field(default_factory=dict)  # secrets replaced, by kind


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

    def keyword_text(self, with_heading: bool) -> str:
        """What the keyword index counts: each word of a document once, so no overlap,
        and the heading only where `with_heading` (the first chunk of its section)."""
        fresh = self.text[self.fresh_from :]
        return f"{self.heading}\n\n{fresh}" if with_heading and self.heading else fresh


def embedding_text(heading: str, text: str) -> str:
    """A chunk's embedding text from its heading path and text, as stored in pgrecall.chunks."""
    return f"{heading}\n\n{text}" if heading else text
