"""Hits people and assistants can use, made after fusion from its ranked candidates (issue 39).

Pure functions: which candidates an arm vouches for, which of them are one passage, and the
passage's text, ranks and scores. Fusion (pgrecall.api.fuse) is not touched: the eval's figures,
which rank candidates, stay what they were (the engine's Searcher.search joins and hides nothing).

- The floor: a hit is shown when an arm vouches for it, its keyword match holding a word that is
  no stop word (pgrecall.api.store's keyword_words), or its cosine similarity with the query at
  least the one the prompt hook takes as relevant (PGRECALL_HOOK_MIN_SCORE). A vector-only hit
  with nothing to do with the query is otherwise always in the list, fusion being relative.
- Merging: candidates of one document whose chunks are consecutive or one chunk apart are one
  passage, its text the chunks from the first to the last in document order (the one between
  included), its place the best one's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

GAP = 2  # chunks at most this far apart (ordinals) are one passage: consecutive, or one chunk between


class Candidate(Protocol):
    """What the floor and the merging read of a fused candidate with its row."""

    @property
    def document_id(self) -> int: ...

    @property
    def ordinal(self) -> int: ...


def vouched(
    ranks: Mapping[str, int | None], similarity: float | None, keyword_words: bool, min_similarity: float
) -> bool:
    """Whether an arm vouches for a hit: the keyword arm found it on a word that is no stop word, or
    its similarity with the query is at least `min_similarity`."""
    if ranks.get("keyword") is not None and keyword_words:
        return True
    return similarity is not None and similarity >= min_similarity


def groups(candidates: Sequence[Candidate], merge: bool) -> list[list[int]]:
    """The candidates (positions in `candidates`, best first) as passages: each a list of positions
    in document order, the passages in the order of their best candidate. Without `merge`, each
    candidate alone."""
    if not merge:
        return [[position] for position in range(len(candidates))]
    by_document: dict[int, list[int]] = {}
    for position, candidate in enumerate(candidates):
        by_document.setdefault(candidate.document_id, []).append(position)
    passages: list[list[int]] = []
    for positions in by_document.values():
        in_order = sorted(positions, key=lambda p: (candidates[p].ordinal, p))
        current = [in_order[0]]
        for position in in_order[1:]:
            if candidates[position].ordinal - candidates[current[-1]].ordinal <= GAP:
                current.append(position)
            else:
                passages.append(current)
                current = [position]
        passages.append(current)
    return sorted(passages, key=min)


def joined_text(chunks: Sequence[tuple[str, int | None]]) -> str:
    """The text of consecutive chunks (text, fresh_from), each without what repeats its predecessor's end."""
    parts = [text if at == 0 or not fresh_from else text[fresh_from:] for at, (text, fresh_from) in enumerate(chunks)]
    return "\n\n".join(part.strip() for part in parts if part.strip())


def best_ranks(all_ranks: Sequence[Mapping[str, int | None]]) -> dict[str, int | None]:
    """Each arm's best (smallest) rank among a passage's chunks; None where no chunk was found by it."""
    arms = dict.fromkeys(arm for ranks in all_ranks for arm in ranks)
    return {arm: min((r[arm] for r in all_ranks if r.get(arm) is not None), default=None) for arm in arms}  # type: ignore[type-var]


def best_arm_scores(all_scores: Sequence[Mapping[str, float | None] | None]) -> dict[str, float | None] | None:
    """Each arm's best normalised score among a passage's chunks (convex fusion); None under rrf."""
    present = [scores for scores in all_scores if scores is not None]
    if not present:
        return None
    arms = dict.fromkeys(arm for scores in present for arm in scores)
    return {arm: max((s[arm] for s in present if s.get(arm) is not None), default=None) for arm in arms}  # type: ignore[type-var]
