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


@dataclasses.dataclass(frozen=True)
class Chunk:
    ordinal: int
    heading: str
    text: str
    token_count: int

    @property
    def embedding_text(self) -> str:
        """What the model and the keyword index see: the heading path gives context."""
        return f"{self.heading}\n\n{self.text}" if self.heading else self.text
