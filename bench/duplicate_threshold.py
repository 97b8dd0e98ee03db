"""The near-duplicate threshold of `remember` (PGRECALL_MEMORY_DUPLICATE_SIMILARITY), measured. Prints JSON.

    nice -n 19 .venv/bin/python bench/duplicate_threshold.py \
        [--pairs bench/data/duplicate_pairs.tsv] [--details bench/data/duplicate_detail_pairs.tsv]

The pairs (hand-written, label `same`: one fact in other words; `different`: the same
topic, another fact, "Staging runs three replicas" / "Production runs three replicas")
are embedded by the configured model (PGRECALL_EMBED_BACKEND) as `remember` embeds a new
text, and each pair is judged by pgrecall.worker.memory_door.is_near_duplicate (cosine
similarity at or above the threshold, a shared rare term, and no detail of its own: a
number, identifier, name or negation). Two pairs in three choose the threshold: the lowest
one of the grid whose precision is at least TARGET_PRECISION (the most recall that
precision allows; between equal recalls the most precision); the third pair of each label, held out, checks the choice. The curve's
points are printed for both parts, with cosine alone beside them.

The detail pairs (`--details`: one fact in other words that keep its numbers, codes and
names; another fact that differs from it only by one of them or a negation, "E-4711" /
"E-4712") measure the rule where the model cannot tell: `refuse` is judged on both sets at
the chosen threshold and at PGRECALL_MEMORY_DUPLICATE_SIMILARITY, by the rule and by the
rule without its details (`similar_only`, memory_door.is_similar: the rule before issue 38).
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

import numpy as np

from pgrecall.embedders.embedding import embedder_for
from pgrecall.settings import load_settings
from pgrecall.worker.memory.door import Candidate, is_near_duplicate, is_similar

TARGET_PRECISION = 0.9
GRID = [round(0.5 + 0.025 * step, 3) for step in range(19)]  # 0.5 .. 0.95


def read_pairs(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as file:
        rows = list(csv.DictReader(file, delimiter="\t"))
    for row in rows:
        if row["label"] not in ("same", "different"):
            raise SystemExit(f"{path}: unknown label {row['label']!r}")
    return rows


def held_out(rows: list[dict[str, str]]) -> list[bool]:
    """Every third pair of each label."""
    seen = {"same": 0, "different": 0}
    flags = []
    for row in rows:
        flags.append(seen[row["label"]] % 3 == 2)
        seen[row["label"]] += 1
    return flags


def point(judged: list[bool], labels: list[bool], threshold: float) -> dict[str, float | int]:
    true_positive = sum(j and s for j, s in zip(judged, labels, strict=True))
    false_positive = sum(j and not s for j, s in zip(judged, labels, strict=True))
    positives = sum(labels)
    precision = true_positive / (true_positive + false_positive) if true_positive + false_positive else 1.0
    return {
        "threshold": threshold,
        "precision": round(precision, 3),
        "recall": round(true_positive / positives, 3) if positives else 0.0,
        "false_positives": false_positive,
    }


RULES = {
    "rule": is_near_duplicate,
    "similar_only": is_similar,
    "cosine_only": lambda text, candidate, threshold: candidate.similarity >= threshold,
}


def judge(rows, similarities, labels, threshold: float, rule: str) -> dict[str, float | int]:
    judged = [
        RULES[rule](row["b"], Candidate("a", row["a"], float(s)), threshold)
        for row, s in zip(rows, similarities, strict=True)
    ]
    return point(judged, labels, threshold)


def curve(rows, similarities, labels, rule: str = "rule") -> list[dict[str, float | int]]:
    return [judge(rows, similarities, labels, threshold, rule) for threshold in GRID]


def similarities_of(embedder, rows) -> np.ndarray:
    first = embedder.embed_batch([row["a"] for row in rows])
    second = embedder.embed_batch([row["b"] for row in rows])
    return (first * second).sum(axis=1) / (np.linalg.norm(first, axis=1) * np.linalg.norm(second, axis=1))


def choose(points: list[dict[str, float | int]]) -> float:
    good = [p for p in points if p["precision"] >= TARGET_PRECISION]
    if not good:
        raise SystemExit(f"no threshold of the grid reaches precision {TARGET_PRECISION}")
    # The most recall; between equal recalls (a model whose cosines sit high, as e5's do, is flat over
    # much of the grid) the most precision; then the lowest threshold.
    best = max(good, key=lambda p: (p["recall"], p["precision"], -p["threshold"]))
    return float(best["threshold"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=Path, default=Path(__file__).parent / "data" / "duplicate_pairs.tsv")
    parser.add_argument("--details", type=Path, default=Path(__file__).parent / "data" / "duplicate_detail_pairs.tsv")
    args = parser.parse_args()
    rows = read_pairs(args.pairs)
    settings = load_settings()
    embedder = embedder_for(settings)
    similarities = similarities_of(embedder, rows)
    hold = held_out(rows)
    parts = {}
    for name, keep in (("train", [not h for h in hold]), ("held_out", hold)):
        part_rows = [row for row, k in zip(rows, keep, strict=True) if k]
        part_sims = [s for s, k in zip(similarities, keep, strict=True) if k]
        labels = [row["label"] == "same" for row in part_rows]
        parts[name] = {
            "same": sum(labels),
            "different": len(labels) - sum(labels),
            "curve": curve(part_rows, part_sims, labels),
            "cosine_only": curve(part_rows, part_sims, labels, "cosine_only"),
        }
    chosen = choose(parts["train"]["curve"])
    at = {name: next(p for p in part["curve"] if p["threshold"] == chosen) for name, part in parts.items()}
    detail_rows = read_pairs(args.details)
    sets = {"pairs": (rows, similarities), "details": (detail_rows, similarities_of(embedder, detail_rows))}
    refuse = {
        name: {
            f"{rule}@{threshold}": judge(
                set_rows, set_sims, [row["label"] == "same" for row in set_rows], threshold, rule
            )
            for threshold in sorted({chosen, settings.memory_duplicate_similarity})
            for rule in ("similar_only", "rule")
        }
        for name, (set_rows, set_sims) in sets.items()
    }
    print(
        json.dumps(
            {
                "model": embedder.space,
                "pairs": len(rows),
                "target_precision": TARGET_PRECISION,
                "chosen_threshold": chosen,
                "at_chosen": at,
                "refuse": refuse,
                "detail_pairs": len(detail_rows),
                **parts,
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
