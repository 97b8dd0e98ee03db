"""Query enrichment from the model's own WordPiece vocabulary.

A word the tokenizer must split into several pieces is rare in the model's
training text: most likely a technical or domain term ("metalloproteinase",
"E-4711"). Such key terms make extra query variants, searched alongside the
query as typed and fused with it.
"""

from __future__ import annotations

import re
from collections.abc import Callable

MAX_VARIANTS = 3
_WORD = re.compile(r"[\w][\w\-./]*[\w]|\w")
# Frequent words that WordPiece happens to split but that carry no topic.
_IGNORED = frozenset({"however", "therefore", "although", "whereas", "whether", "without", "within"})


def key_terms(query: str, word_pieces: Callable[[str], list[str]], min_pieces: int = 2) -> list[str]:
    terms: dict[str, None] = {}
    for word in _WORD.findall(query):
        if len(word) < 4 or word.lower() in _IGNORED or word.isdigit():
            continue
        if len(word_pieces(word)) >= min_pieces:
            terms.setdefault(word, None)
    return list(terms)


def query_variants(query: str, word_pieces: Callable[[str], list[str]]) -> list[str]:
    """The query itself, then (when it has key terms) the key terms alone and the query stressing them."""
    query = query.strip()
    terms = key_terms(query, word_pieces)
    variants = [query]
    if terms:
        variants.append(" ".join(terms))
        variants.append(f"{query} {' '.join(terms)}")
    distinct = list(dict.fromkeys(v for v in variants if v))
    return distinct[:MAX_VARIANTS]
