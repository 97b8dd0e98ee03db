"""A document's language, as the PostgreSQL text search configuration its keyword postings use:
its front matter's, else detected (pgrecall.language_detection)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from pgrecall.language_detection import DETECTED_CHARS, detect
from pgrecall.languages import DEFAULT_LANGUAGES, configuration_of


def document_language(
    metadata: dict[str, Any], texts: Iterable[str], languages: Sequence[str] = DEFAULT_LANGUAGES
) -> str:
    """A document's configuration: its front matter's lang:/language: if it names one, else detected."""
    for key in ("lang", "language"):
        named = configuration_of(metadata.get(key))
        if named is not None:
            return named
    sample, size = [], 0
    for text in texts:
        sample.append(text)
        size += len(text)
        if size >= DETECTED_CHARS:
            break
    return detect("\n".join(sample), languages)
