"""Fusion of the arms' ranked lists into one ranking.

Two fusions, chosen per search (pgrecall.contract.FUSIONS):

* Reciprocal Rank Fusion: score(d) = sum over lists of weight / (k + rank of d in that list).
  Ranks only: how far apart the arms' scores are is not used.
* Convex combination (Bruch, Gai and Ingber, ACM TOIS 2023): each list's scores are min-max
  normalised within the query's candidate list (the best candidate 1, the worst 0; a list whose
  scores are all equal gives each of its candidates 1), and
  score(d) = alpha * vector(d) + (1 - alpha) * keyword(d), where an arm that did not find d gives 0.
  With query-enrichment variants (several lists per arm), an arm's score of d is the largest of
  its lists' weight * normalised score, so a variant (weight 0.5) counts at most half the query as typed.

A document the vector arm cannot judge (`keyword_only`: in a language the embedding model's card
does not name, pgrecall.languages.model_card_languages, or any document when the query is in such a
language) gets no vector evidence either way: its vector term is the arm's mean over the query's
candidates, what the arm says of a candidate it knows nothing about, and its keyword evidence counts
with the keyword arm's weight as every document's does (one the keyword arm did not find has no
evidence at all, and scores 0). So it earns its place against documents both
arms judge: a keyword match alone no longer counts for both arms (issue 38: a German page matching one
English word outranked the English page both arms found), and the vector arm neither lifts nor sinks
it. Convex: its vector score is the mean of the vector list's normalised scores; RRF: its vector terms
are the mean of the vector list's reciprocal ranks. Where every candidate is keyword-only, hybrid ranks
as keyword.

The reverse (`vector_only`): a document in another language than the query, both covered by the
model, that the keyword arm cannot judge (a question shares few words with a note in another
language, so not matching says nothing against it). Its keyword term is the keyword arm's mean, on
the same terms; where every candidate is vector-only (German questions over English notes), hybrid
ranks as vector.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Collection, Hashable, Mapping, Sequence
from typing import NamedTuple

from pgrecall.projects import folder_name

DEFAULT_K = 60
DEFAULT_ALPHA = 0.5  # equal weights for the two arms: chosen by principle, not tuned
ARMS = ("vector", "keyword")


@dataclasses.dataclass(frozen=True)
class RankedList:
    arm: str  # "vector" or "keyword"
    ids: Sequence[Hashable]  # best first
    weight: float = 1.0
    scores: Sequence[float] | None = None  # the arm's score of each id (higher is better), for convex fusion


class Fused(NamedTuple):
    """A fused candidate: a named tuple, as fusion makes one for every candidate of every search."""

    id: Hashable
    score: float
    ranks: dict[str, int | None]  # best 1-based rank per arm, None where the arm did not find it
    arm_scores: dict[str, float | None] | None = None  # convex: each arm's (weighted) normalised score


def _arm_names(lists: Sequence[RankedList], arms: Sequence[str]) -> list[str]:
    return list(dict.fromkeys([*arms, *(lst.arm for lst in lists)]))


def _best_ranks(lists: Sequence[RankedList], arm_names: list[str]) -> dict[Hashable, list[int | None]]:
    """Each id's best 1-based rank per arm (by the arm's place in `arm_names`), ids in order of
    first appearance. Lists by place rather than dicts by name: fusion runs over every candidate
    of every search, and these are made into dicts once, for the fused candidates."""
    place = {arm: at for at, arm in enumerate(arm_names)}
    best: dict[Hashable, list[int | None]] = {}
    for ranked in lists:
        arm = place[ranked.arm]
        for rank, item in enumerate(ranked.ids, start=1):
            item_ranks = best.get(item)
            if item_ranks is None:
                item_ranks = best[item] = [None] * len(arm_names)
            current = item_ranks[arm]
            if current is None or rank < current:
                item_ranks[arm] = rank
    return best


def _by_score(scores: dict[Hashable, float]) -> list[Hashable]:
    """The ids best first; equal scores keep the order of `scores` (first appearance): the sort is stable."""
    return sorted(scores, key=scores.__getitem__, reverse=True)


def reciprocal_rank_fusion(
    lists: Sequence[RankedList],
    k: int = DEFAULT_K,
    arms: Sequence[str] = (),
    keyword_only: Collection[Hashable] = frozenset(),
    vector_only: Collection[Hashable] = frozenset(),
) -> list[Fused]:
    """Fuse ranked lists; ties keep the order of first appearance, so results are deterministic.
    An id of `keyword_only` takes the vector lists' mean terms instead of its own, one of
    `vector_only` the keyword lists' (module docstring)."""
    if k <= 0:
        raise ValueError("k must be positive")
    arm_names = _arm_names(lists, arms)
    best = _best_ranks(lists, arm_names)
    scores: dict[Hashable, float] = dict.fromkeys(best, 0.0)
    unjudged = {"vector": keyword_only, "keyword": vector_only}
    imputed = dict.fromkeys(unjudged, 0.0)
    for ranked in lists:
        skipped = unjudged.get(ranked.arm, frozenset())
        if skipped and ranked.ids:
            n = len(ranked.ids)
            imputed[ranked.arm] += ranked.weight * sum(1.0 / (k + rank) for rank in range(1, n + 1)) / n
        for rank, item in enumerate(ranked.ids, start=1):
            if item not in skipped:
                scores[item] += ranked.weight / (k + rank)
    for arm, items in unjudged.items():
        other = [at for at, name in enumerate(arm_names) if name != arm]
        for item in items if imputed[arm] else ():
            # Only one the other arm found: a candidate neither judging arm found has no evidence.
            if item in scores and any(best[item][at] is not None for at in other):
                scores[item] += imputed[arm]
    return [Fused(item, scores[item], dict(zip(arm_names, best[item], strict=True))) for item in _by_score(scores)]


def min_max(scores: Sequence[float]) -> list[float]:
    """Scores onto [0, 1] within their list: best 1, worst 0; all equal (one candidate included) all 1."""
    if not scores:
        return []
    low, high = min(scores), max(scores)
    if high == low:
        return [1.0] * len(scores)
    return [(score - low) / (high - low) for score in scores]


def convex_fusion(
    lists: Sequence[RankedList],
    alpha: float = DEFAULT_ALPHA,
    arms: Sequence[str] = (),
    keyword_only: Collection[Hashable] = frozenset(),
    vector_only: Collection[Hashable] = frozenset(),
) -> list[Fused]:
    """alpha * vector + (1 - alpha) * keyword of min-max normalised scores; a missing arm gives 0.
    An id of `keyword_only` takes the vector arm's mean score instead of its own, one of
    `vector_only` the keyword arm's (module docstring).
    Ties keep the order of first appearance, so results are deterministic."""
    if not 0.0 <= alpha <= 1.0:
        raise ValueError("alpha must be from 0 to 1")
    arm_names = _arm_names(lists, arms)
    unknown = set(arm_names) - set(ARMS)
    if unknown:
        raise ValueError(f"convex fusion fuses the arms {', '.join(ARMS)}, not {sorted(unknown)}")
    place = {arm: at for at, arm in enumerate(arm_names)}
    # One pass over each list gathers both an id's best rank and its best weighted score per arm:
    # fusion runs over every candidate of every search.
    ranks: dict[Hashable, list[int | None]] = {}
    values: dict[Hashable, list[float | None]] = {}
    for ranked in lists:
        if ranked.scores is None or len(ranked.scores) != len(ranked.ids):
            raise ValueError(f"convex fusion needs a score for every id of the {ranked.arm} list")
        arm, weight = place[ranked.arm], ranked.weight
        for rank, (item, normalised) in enumerate(zip(ranked.ids, min_max(ranked.scores), strict=True), start=1):
            item_ranks = ranks.get(item)
            if item_ranks is None:
                item_ranks = ranks[item] = [None] * len(arm_names)
                item_values = values[item] = [None] * len(arm_names)
            else:
                item_values = values[item]
            current_rank = item_ranks[arm]
            if current_rank is None or rank < current_rank:
                item_ranks[arm] = rank
            value = weight * normalised
            current = item_values[arm]
            if current is None or value > current:
                item_values[arm] = value
    # What the score counts: the arms' values, but an unjudged candidate's value of the arm that
    # cannot judge it imputed. arm_scores keep what each arm said, which also decides between exact
    # ties (_evidence).
    counted = values
    for arm, unjudged in (("vector", keyword_only), ("keyword", vector_only)):
        if unjudged and arm in place:
            counted = counted | _imputed(values, unjudged, arm, place[arm], lists)
    weights = [{"vector": alpha, "keyword": 1.0 - alpha}[arm] for arm in arm_names]
    if len(arm_names) == 2:
        # Every search's two arms, written out: the same sum in the same order, in a third of the time.
        (a0, a1), (w0, w1) = arm_names, weights
        scores = {item: w0 * (v0 or 0.0) + w1 * (v1 or 0.0) for item, (v0, v1) in counted.items()}
        return [
            Fused(item, scores[item], {a0: (r := ranks[item])[0], a1: r[1]}, {a0: (v := values[item])[0], a1: v[1]})
            for item in _by_score(scores)
        ]
    # sum() of the arms' terms in the arms' order, as fusion always added them.
    scores = {
        item: sum([w * (value or 0.0) for w, value in zip(weights, item_values, strict=True)])
        for item, item_values in counted.items()
    }
    return [
        Fused(
            item,
            scores[item],
            dict(zip(arm_names, ranks[item], strict=True)),
            dict(zip(arm_names, values[item], strict=True)),
        )
        for item in _by_score(scores)
    ]


def _imputed(
    values: dict[Hashable, list[float | None]],
    unjudged: Collection[Hashable],
    arm: str,
    at: int,
    lists: Sequence[RankedList],
) -> dict[Hashable, list[float | None]]:
    """The values each candidate `arm` cannot judge is scored with: one the other arm found takes
    `arm`'s mean as its value (the best of its lists' weight * mean normalised score, as an arm's
    score is the best of its lists'); one it did not find has no evidence at all."""
    means = [
        ranked.weight * math.fsum(normalised) / len(normalised)
        for ranked in lists
        if ranked.arm == arm and (normalised := min_max(ranked.scores or []))
    ]
    imputed = max(means, default=None)
    substituted: dict[Hashable, list[float | None]] = {}
    for item in unjudged:
        item_values = values.get(item)
        if item_values is None:
            continue
        found = any(value is not None for other, value in enumerate(item_values) if other != at)
        substituted[item] = [*item_values]
        substituted[item][at] = imputed if found else None
    return substituted


# --- After fusion: the project searched from, then recency between exact ties ----------------------

# A document of the project searched from counts this much more under convex fusion (score * 1.1).
# Small on purpose: it reorders passages of about equal relevance, while an exact match in another
# project (an identifier only it holds scores far above the rest) keeps its place.
PROJECT_BOOST = 0.1


def project_boost(fusion: str, rrf_k: int = DEFAULT_K) -> float:
    """The boost for a fusion's scores. Reciprocal rank scores are close together (first place in
    both arms 2/61, second 2/62, fifth 2/65), so there it is half a step of rank at the top,
    1/(2k): it decides between documents the ranks hold equal or nearly (first in one arm,
    second in the other), and lifts none over one a whole rank better in both arms (within the first k places)."""
    return PROJECT_BOOST if fusion == "convex" else 1.0 / (2 * rrf_k)


@dataclasses.dataclass(frozen=True)
class Facts:
    """What the ranking after fusion knows of a candidate's document."""

    project: str | None
    occurred: float | None  # its own time, as a POSIX timestamp


def _evidence(item: Fused) -> tuple[float, ...]:
    """What decides between equal fused scores before recency: lexical evidence first (the
    keyword arm's rank or score, then the vector arm's), as the keyword-first order of the
    lists did. Candidates equal in this too are an exact tie."""
    if item.arm_scores is not None:
        # Found last by an arm (normalised 0.0) is more evidence than not found at all (None).
        return tuple(
            math.inf if (score := item.arm_scores.get(arm)) is None else -score for arm in ("keyword", "vector")
        )
    return tuple(float(item.ranks.get(arm) or math.inf) for arm in ("keyword", "vector"))


def exact_ties(fused: Sequence[Fused], within: int | None = None) -> list[Hashable]:
    """The candidates that share their fused score and evidence with another: the ones recency
    orders. within: only the groups that reach into the first `within` candidates; a group wholly
    below them stays below them (its score is at most theirs), so the first `within` do not
    depend on its order."""
    # Only a score among the first `within` can make a group that reaches into them.
    reaching = None if within is None else {item.score for item in fused[:within]}
    groups: dict[tuple, list[tuple[int, Hashable]]] = {}
    for position, item in enumerate(fused):
        if reaching is None or item.score in reaching:
            groups.setdefault((item.score, _evidence(item)), []).append((position, item.id))
    return [
        item
        for group in groups.values()
        if len(group) > 1 and (within is None or group[0][0] < within)
        for _, item in group
    ]


def rerank(
    fused: Sequence[Fused],
    facts: Mapping[Hashable, Facts],
    project: str | None = None,
    boost: float = PROJECT_BOOST,
) -> list[Fused]:
    """The fused candidates, with the documents of `project` boosted (score * (1 + boost), see
    project_boost; documents of no project and of other projects keep their score), then ordered
    by score, evidence, newer first, and the fusion's own order. With no project the scores are
    unchanged and only exact ties can move. A project that is a path is also named by its folder's
    name, as a note's front matter names it (`project: apollo` for ~/code/apollo)."""
    position = {item.id: at for at, item in enumerate(fused)}
    names = {project, folder_name(project)} - {None} if project is not None else set()

    def boosted(item: Fused) -> Fused:
        fact = facts.get(item.id)
        if fact is None or fact.project not in names:
            return item
        return item._replace(score=item.score * (1.0 + boost))

    def newest_first(item: Fused) -> float:
        fact = facts.get(item.id)
        return -(fact.occurred if fact is not None and fact.occurred is not None else -math.inf)

    ranked = [boosted(item) for item in fused]
    return sorted(ranked, key=lambda item: (-item.score, _evidence(item), newest_first(item), position[item.id]))
