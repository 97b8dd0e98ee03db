"""Reciprocal Rank Fusion: score(d) = sum over lists of weight / (k + rank of d in that list)."""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Sequence

DEFAULT_K = 60


@dataclasses.dataclass(frozen=True)
class RankedList:
    arm: str  # "vector" or "keyword"
    ids: Sequence[Hashable]  # best first
    weight: float = 1.0


@dataclasses.dataclass(frozen=True)
class Fused:
    id: Hashable
    score: float
    ranks: dict[str, int | None]  # best 1-based rank per arm, None where the arm did not find it


def reciprocal_rank_fusion(lists: Sequence[RankedList], k: int = DEFAULT_K, arms: Sequence[str] = ()) -> list[Fused]:
    """Fuse ranked lists; ties keep the order of first appearance, so results are deterministic."""
    if k <= 0:
        raise ValueError("k must be positive")
    arm_names = list(dict.fromkeys([*arms, *(lst.arm for lst in lists)]))
    scores: dict[Hashable, float] = {}
    best: dict[Hashable, dict[str, int | None]] = {}
    for ranked in lists:
        for rank, item in enumerate(ranked.ids, start=1):
            scores[item] = scores.get(item, 0.0) + ranked.weight / (k + rank)
            item_ranks = best.setdefault(item, dict.fromkeys(arm_names))
            current = item_ranks.get(ranked.arm)
            if current is None or rank < current:
                item_ranks[ranked.arm] = rank
    order = {item: position for position, item in enumerate(scores)}
    fused = sorted(scores, key=lambda item: (-scores[item], order[item]))
    return [Fused(item, scores[item], best[item]) for item in fused]
