"""Where a run's JSON goes (never inside a checkout), and the figures two runs share, as ratios."""

from __future__ import annotations

import datetime
import json
import os
import statistics
from pathlib import Path

RESULTS_VARIABLE = "PGRECALL_BENCH_RESULTS"
REPO = Path(__file__).resolve().parents[2]


class ResultsInsideTree(SystemExit):
    """Benchmark results are written outside the repository: choose another folder."""


def results_dir(given: str | Path | None = None) -> Path:
    """`given`, PGRECALL_BENCH_RESULTS, or $XDG_DATA_HOME/pgrecall/bench (~/.local/share/pgrecall/bench)."""
    if given or os.environ.get(RESULTS_VARIABLE):
        folder = Path(given or os.environ[RESULTS_VARIABLE]).expanduser().resolve()
    else:
        data_home = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
        folder = Path(data_home).expanduser().resolve() / "pgrecall" / "bench"
    if folder.is_relative_to(REPO):
        raise ResultsInsideTree(f"{folder} is inside the checkout {REPO}: results are written outside the tree")
    return folder


def write_result(folder: Path, name: str, payload: dict) -> Path:
    """payload as `NAME-<UTC time>.json` in folder (made if missing); its path."""
    folder.mkdir(parents=True, exist_ok=True)
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%SZ")
    path = folder / f"{name}-{stamp}.json"
    path.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return path


def figures(result: object, prefix: str = "") -> dict[str, float]:
    """Every number of a JSON result by its path (`with_serve.p50_ms`, `runs.0.seconds`), booleans left out."""
    if isinstance(result, bool):
        return {}
    if isinstance(result, int | float):
        return {prefix: float(result)}
    items = result.items() if isinstance(result, dict) else enumerate(result) if isinstance(result, list) else ()
    found: dict[str, float] = {}
    for key, value in items:
        found.update(figures(value, f"{prefix}.{key}" if prefix else str(key)))
    return found


def median_figures(results: list[object]) -> dict[str, float]:
    """Each figure's median over the rounds that printed it."""
    every: dict[str, list[float]] = {}
    for result in results:
        for name, value in figures(result).items():
            every.setdefault(name, []).append(value)
    return {name: statistics.median(values) for name, values in every.items()}


def ratios(this: dict[str, float], against: dict[str, float]) -> dict[str, float]:
    """this / against for each figure both have (against not zero), rounded to 3 places."""
    return {name: round(this[name] / against[name], 3) for name in this if against.get(name)}
