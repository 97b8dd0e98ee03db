"""The vector arm's effort (pgrecall.api.vector_effort): a pure rule, no database."""

import pytest

from pgrecall.api.vector_effort import (
    EF_BY_ROWS,
    EXACT_ROWS,
    FILTERED_EXACT_ROWS,
    MAX_SCAN_TUPLES,
    Effort,
    choose_effort,
)

LIMIT = 100


@pytest.mark.parametrize("configured", [1, 40, 100, 400, 1000])
@pytest.mark.parametrize("rows", [None, 10, 23_344, 1_000_000])
@pytest.mark.parametrize("selectivity", [1.0, 0.001])
def test_a_configured_ef_search_is_used_as_before(configured, rows, selectivity):
    assert choose_effort(rows, selectivity, LIMIT, configured) == Effort(False, max(configured, LIMIT))


@pytest.mark.parametrize("rows", [0, 1, 300, EXACT_ROWS])
def test_a_small_space_is_ranked_exactly(rows):
    assert choose_effort(rows, 1.0, LIMIT, None) == Effort(True, 0)


@pytest.mark.parametrize(
    ("rows", "selectivity"), [(1_000_000, 0.01), (300_000, 0.1), (100_000, 0.1), (23_344, 0.3), (2_000, 0.5)]
)
def test_a_filter_that_keeps_few_chunks_is_ranked_exactly(rows, selectivity):
    # The sweep: through a filter the graph's cost grows as 1 / selectivity, the exact scan's as the rows kept.
    assert choose_effort(rows, selectivity, LIMIT, None).exact


@pytest.mark.parametrize(("rows", "selectivity"), [(1_000_000, 0.5), (300_000, 0.2), (23_344, 0.5), (2_000, 1.0)])
def test_a_filter_that_keeps_many_chunks_reads_the_graph(rows, selectivity):
    assert not choose_effort(rows, selectivity, LIMIT, None).exact


def test_a_filter_an_iterative_scan_would_stop_short_of_is_ranked_exactly():
    # Many matching rows in all, but too few among the tuples an iterative scan may visit.
    selectivity = LIMIT / MAX_SCAN_TUPLES
    rows = 100 * FILTERED_EXACT_ROWS / selectivity**2
    assert choose_effort(rows, selectivity, LIMIT, None).exact
    assert not choose_effort(rows, 1.0, LIMIT, None).exact


def test_the_graph_is_read_longer_as_the_space_grows():
    sizes = [EXACT_ROWS + 1, 23_344, 100_000, 300_000, 1_000_000, 10_000_000]
    assert choose_effort(sizes[0], 1.0, LIMIT, None).ef_search == LIMIT  # never below the limit
    efforts = [choose_effort(rows, 1.0, LIMIT, None) for rows in sizes]
    assert not any(effort.exact for effort in efforts)
    ef = [effort.ef_search for effort in efforts]
    assert ef == sorted(ef)
    assert ef[-2] == ef[-1] == EF_BY_ROWS[-1][1] == 400  # 1M: the value its sweep needed


def test_a_space_of_unknown_size_is_read_as_the_largest():
    assert choose_effort(None, 1.0, LIMIT, None) == Effort(False, EF_BY_ROWS[-1][1])
    assert choose_effort(None, 0.5, LIMIT, None) == Effort(False, EF_BY_ROWS[-1][1])


def test_ef_search_is_never_below_the_limit():
    assert all(choose_effort(rows, 1.0, 300, None).ef_search >= 300 for rows in (5_000, 100_000, 1_000_000))


def test_a_filter_does_not_lower_the_effort_for_the_size():
    for rows in (50_000, 500_000, 2_000_000):
        unfiltered = choose_effort(rows, 1.0, LIMIT, None)
        filtered = choose_effort(rows, 0.5, LIMIT, None)
        assert filtered.exact or filtered.ef_search == unfiltered.ef_search


@pytest.mark.parametrize("selectivity", [-0.5, 0.0, 1.0, 3.0])
def test_selectivity_outside_zero_to_one_is_clamped(selectivity):
    effort = choose_effort(1_000_000, selectivity, LIMIT, None)
    assert effort == (Effort(True, 0) if selectivity <= 0 else choose_effort(1_000_000, 1.0, LIMIT, None))
