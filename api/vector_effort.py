"""How much of its HNSW graph the vector arm reads: ef_search, or an exact scan, for the space it searches.

A fixed ef_search has to be the one the largest index needs (400 for recall@10 >= 0.95 at 1M chunks),
and on a small index that reads far more of the graph than recall needs. Here the effort follows
the number of chunks the search can find: the rows of the space's index (its pg_class estimate, no
count) times the share of them the filters keep (the planner's estimate). Few of them: an exact scan,
cheaper than the graph and exact. Otherwise the smallest ef_search that kept recall@10 >= 0.95 at
that size in bench/ann_effort_sweep.py (docs/search.md#vector-arm-effort has its table).
"""

from __future__ import annotations

from typing import NamedTuple

# (largest number of rows, ef_search): the smallest ef_search with recall@10 >= 0.95 up to that many
# rows in the sweep, with a step of margin. Beyond the last: the last.
EF_BY_ROWS: tuple[tuple[float, int], ...] = (
    (30_000, 40),
    (150_000, 100),
    (400_000, 200),
    (float("inf"), 400),
)

# At most this many matching rows, an exact scan is as fast as the graph (the sweep's crossover).
EXACT_ROWS = 5_000

# pgvector's hnsw.max_scan_tuples (its default, which searches keep): an iterative scan stops after
# visiting this many tuples. A filter that keeps so few rows that LIMIT of them are not among that
# many (selectivity * MAX_SCAN_TUPLES < limit) would leave the arm short: scanned exactly instead.
MAX_SCAN_TUPLES = 20_000


class Effort(NamedTuple):
    exact: bool  # rank every matching chunk, without the graph
    ef_search: int  # hnsw.ef_search where the graph is read (0 when exact)


def choose_effort(rows: float | None, selectivity: float, limit: int, configured: int | None) -> Effort:
    """The vector arm's effort for a space of `rows` chunks (None: not known) of which the filters keep
    `selectivity` (0 to 1; 1 without filters), asked for `limit` chunks; `configured`:
    PGRECALL_EF_SEARCH where set, which is used as it was before this rule (never exact)."""
    if configured is not None:
        return Effort(False, max(configured, limit))
    selectivity = min(max(selectivity, 0.0), 1.0)
    if rows is not None and rows * selectivity <= EXACT_ROWS:
        return Effort(True, 0)
    if selectivity * MAX_SCAN_TUPLES < 2 * limit:
        return Effort(True, 0)
    wanted = EF_BY_ROWS[-1][1] if rows is None else next(ef for most, ef in EF_BY_ROWS if rows <= most)
    return Effort(False, wanted)
