"""Identifiers that English text search mangles, kept whole as extra lexemes.

PostgreSQL's parser splits `E-4711` into `e` and `-4711`, `my_var` into `my`
and `var`, and stems `CamelCase`; a search for the identifier then matches its
neighbours too. Indexing and querying both add the whole identifier,
lower-cased, so it matches exactly.
"""

from __future__ import annotations

import re

_CANDIDATE = re.compile(r"[\w][\w.\-/:]*[\w]")
_IDENTIFIER_SHAPES = (
    re.compile(r"[A-Za-z].*\d|\d.*[A-Za-z]"),  # letters with digits: E-4711, v1.2.3, sha256
    re.compile(r"_"),  # snake_case
    re.compile(r"[a-z][A-Z]"),  # CamelCase
    re.compile(r"\w[.\-/]\w"),  # file.py, DEC-0054, src/main
)


def identifier_terms(text: str) -> list[str]:
    """Distinct identifier-shaped tokens of `text`, lower-cased, in order of appearance."""
    seen: dict[str, None] = {}
    for match in _CANDIDATE.finditer(text):
        token = match.group()
        if len(token) > 64 or token.isdigit():
            continue
        if any(shape.search(token) for shape in _IDENTIFIER_SHAPES):
            seen.setdefault(token.lower(), None)
    return list(seen)
