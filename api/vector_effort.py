"""How much of its HNSW graph the vector arm reads: ef_search, or an exact scan, for the space it searches.

A fixed ef_search has to be the one the largest index needs (400 for recall@10 >= 0.95 at 1M chunks),
and on a small index that reads far more of the graph than recall needs. Here the effort follows
the number of chunks in the space (its HNSW index's pg_class estimate, no count) and the share of
them the filters keep (the planner's estimate). bench/ann_effort_sweep.py measured both ways over
sizes and filters (docs/search.md#the-vector-arms-effort has its table):

- The graph, unfiltered, finds its LIMIT 100 fastest at ef_search = the limit (below it pgvector's
  iterative scan starts again, which costs more than it saves), with recall@10 >= 0.97 up to 300k
  rows; more rows need more (EF_BY_ROWS). Up to EXACT_ROWS rows an exact scan is as fast.
- Through a filter the graph visits about limit / selectivity tuples to find `limit` that pass, and
  to find the true nearest 10 of them it must rank the nearest 10 / selectivity of all, which it does
  worse as the space grows (recall@10 0.944-0.95 at 10% of 300k rows at every ef_search to 400). The
  exact scan reads only the rows that pass: it wins while rows * selectivity^2 stays under
  FILTERED_EXACT_ROWS (10% of 300k rows: 117 ms exact, recall 1.0; 66-90 ms through the graph).
"""

from __future__ import annotations

from typing import NamedTuple

# (most rows, ef_search): the smallest ef_search, from the limit up, with recall@10 >= 0.95 at that
# many rows in the sweep, a step above where the margin was thin. Beyond the last: the last.
EF_BY_ROWS: tuple[tuple[float, int], ...] = (
    (150_000, 100),
    (400_000, 150),
    (float("inf"), 400),
)

# A space, or what its filter keeps of it, of at most this many rows: exact (0.35 against 0.43 ms at
# 500 rows, 1.06 against 0.72 at 2,000).
EXACT_ROWS = 1_000

# Through a filter: exact while rows * selectivity^2 (the rows kept, times the share) is at most this.
FILTERED_EXACT_ROWS = 3_000

# pgvector's hnsw.max_scan_tuples (its default, which searches keep): an iterative scan stops after
# visiting this many tuples. A filter that keeps so few rows that twice `limit` of them are not
# expected among that many would leave the arm short (recall 0.83 at 0.1% of 100k rows): exact.
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
    if rows is not None:
        kept = rows * selectivity
        if kept <= EXACT_ROWS or (selectivity < 1 and kept * selectivity <= FILTERED_EXACT_ROWS):
            return Effort(True, 0)
    if selectivity * MAX_SCAN_TUPLES < 2 * limit:
        return Effort(True, 0)
    wanted = EF_BY_ROWS[-1][1] if rows is None else next(ef for most, ef in EF_BY_ROWS if rows <= most)
    return Effort(False, max(wanted, limit))
