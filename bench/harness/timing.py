"""Percentiles of repeated runs, as every bench reports them: the median, and the nearest rank."""

from __future__ import annotations

import statistics


def percentile(values: list[float], q: float) -> float:
    """The value at the nearest rank of q percent (q from 0 to 100) of `values`."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def summary(values: list[float], digits: int = 3) -> dict[str, float]:
    """p50 (the median), p95, min, max and count of `values`."""
    return {
        "p50": round(statistics.median(values), digits),
        "p95": round(percentile(values, 95), digits),
        "min": round(min(values), digits),
        "max": round(max(values), digits),
        "n": len(values),
    }
