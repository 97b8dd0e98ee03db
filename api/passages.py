"""Hits people and assistants can use, made after fusion from its ranked candidates (issue 39).

Pure functions: which candidates an arm vouches for, which of them are one passage, and the
passage's text, ranks and scores. Fusion (pgrecall.api.fuse) is not touched: the eval's figures,
which rank candidates, stay what they were (the engine's Searcher.search joins and hides nothing).

- The floor: a hit is shown when an arm vouches for it, its keyword match holding a word that is
  no stop word (pgrecall.api.read_queries's keyword_words), or its cosine similarity with the query at
  least the one the prompt hook takes as relevant (PGRECALL_HOOK_MIN_SCORE). A vector-only hit
  with nothing to do with the query is otherwise always in the list, fusion being relative.
- Merging: candidates of one document whose chunks are consecutive are one passage (MAX_CHUNKS at
  most), its text the chunks in document order, each chunk's repeat of the one before (an overlap,
  a conversation unit's context) left out, its place the best one's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

GAP = 1  # chunks this far apart (ordinals) are one passage: consecutive
# A passage holds the best chunk and its best neighbours, three chunks at most: in the word budget an
# assistant is given, a longer one pushes every later hit out (LoCoMo dev, README "Conversations").
MAX_CHUNKS = 3


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


def groups(
    candidates: Sequence[Candidate], merge: bool, limit: int | None = None, shown: Sequence[bool] | None = None
) -> list[list[int]]:
    """The candidates (positions in `candidates`, best first) as at most `limit` passages, in the
    order of their best candidate, each a list of positions in document order. Read in rank order,
    a candidate next to a chunk of a passage of its document joins the best such passage holding
    fewer than MAX_CHUNKS (and joins it to a second one it touches, where both fit); any other
    starts a passage. Once `limit` passages are started, reading stops at the first candidate that
    would start another, so a weak candidate far down never lengthens a passage read first.
    Without `merge`, each candidate alone. `shown`: which candidates may be shown (the floor)."""
    found: list[list[int]] = []
    for position, candidate in enumerate(candidates):
        if shown is not None and not shown[position]:
            continue
        touching = [passage for passage in found if merge and _touches(candidates, passage, candidate)]
        joined = next((passage for passage in touching if len(passage) < MAX_CHUNKS), None)
        if joined is None:
            if limit is not None and len(found) >= limit:
                break
            found.append([position])
            continue
        joined.append(position)
        for other in touching:
            if other is not joined and len(joined) + len(other) <= MAX_CHUNKS:
                joined.extend(other)
                found.remove(other)
        joined.sort(key=lambda p: (candidates[p].ordinal, p))
    return found


def _touches(candidates: Sequence[Candidate], passage: list[int], candidate: Candidate) -> bool:
    return candidates[passage[0]].document_id == candidate.document_id and any(
        abs(candidates[p].ordinal - candidate.ordinal) <= GAP for p in passage
    )


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
