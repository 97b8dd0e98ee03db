"""Hybrid fusion on one-language and mixed-language sets, on the indexes `pgrecall eval` built.

For each BEIR folder given, reuses the database `pgrecall eval FOLDER` indexed (the same
PGRECALL_HOME: nothing is indexed again unless the folder changed) and prints nDCG@10 of the
keyword arm, the vector arm and both fusions. Where corpus ids carry a language (`en-12`,
`de-12`) and query ids end with one (`57-de`), as in ../shared/data/xquad-de-en read at its top
level, it also prints each query language's top-1: the share of questions whose first hit is
their own paragraph in their own language, and in either language (a bilingual vault: an
English question should find the English page first).

    PGRECALL_HOME=/tmp/evalhome-x .venv/bin/python bench/mixed_language_fusion.py ../shared/data/xquad-de-en --json
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path

from pgrecall.composition.evaluation import (
    DEPTH,
    document_run,
    eval_database_url,
    ir_metrics,
    load_dataset,
    write_notes,
)

MODES = {
    "keyword": {"mode": "keyword"},
    "vector": {"mode": "vector"},
    "hybrid:convex": {"mode": "hybrid", "fusion": "convex"},
    "hybrid:rrf": {"mode": "hybrid", "fusion": "rrf"},
}


def _language(identifier: str) -> str | None:
    """The language an id names by its prefix (`de-12`) or suffix (`57-de`), None if neither."""
    for part in (identifier.split("-", 1)[0], identifier.rsplit("-", 1)[-1]):
        if part in ("en", "de"):
            return part
    return None


def top1(qrels, run) -> dict[str, dict[str, float]]:
    """Per query language: the share of questions whose first document is relevant and in the
    question's language ("own"), and relevant in any language ("any")."""
    counts: dict[str, list[int]] = {}
    for query_id, scores in run.items():
        language = _language(query_id)
        if language is None:
            continue
        first = max(scores, key=scores.__getitem__) if scores else None
        relevant = qrels.get(query_id, {})
        own = first is not None and relevant.get(first, 0) > 0 and _language(first) == language
        tally = counts.setdefault(language, [0, 0, 0])
        tally[0] += 1
        tally[1] += own
        tally[2] += first is not None and relevant.get(first, 0) > 0
    return {
        language: {"questions": n, "own": round(own / n, 4), "any": round(found / n, 4)}
        for language, (n, own, found) in sorted(counts.items())
    }


def measure(settings, folder: Path, split: str, modes: list[str]) -> dict:
    from pgrecall.api.searcher import Searcher
    from pgrecall.embedders.embedding import embedder_for
    from pgrecall.worker.run import run_index

    dataset = load_dataset(folder, split)
    notes = settings.home / "eval" / dataset.name / "notes"
    mapping = write_notes(dataset, notes)
    url = eval_database_url(settings, dataset, fresh=False)
    asyncio.run(run_index(settings, url, [str(notes)]))
    result: dict = {"dataset": str(folder), "queries": len(dataset.queries), "modes": {}}
    with Searcher(url, settings, embedder=embedder_for(settings), pool_size=1, exact_vectors=True) as searcher:
        for label in modes:
            options = MODES[label]
            run = {
                query_id: document_run(searcher.search(query, k=DEPTH, **options), mapping)
                for query_id, query in dataset.queries.items()
            }
            figures = {"ndcg@10": ir_metrics(dataset.qrels, run)["ndcg@10"]}
            languages = top1(dataset.qrels, run)
            if languages:
                figures["top1"] = languages
            result["modes"][label] = figures
    return result


def main() -> None:
    from pgrecall.logs import configure_logging
    from pgrecall.settings import load_settings

    configure_logging()  # warnings only, on stderr: stdout is the result
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("datasets", nargs="+", type=Path)
    parser.add_argument("--split", default="test")
    parser.add_argument("--modes", default=",".join(MODES), help="comma-separated, of: " + ", ".join(MODES))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    settings = load_settings()
    modes = [mode for mode in args.modes.split(",") if mode]
    results = [measure(settings, folder, args.split, modes) for folder in args.datasets]
    if args.json:
        print(json.dumps(results, indent=1))
        return
    for result in results:
        print(f"{result['dataset']} ({result['queries']} queries)")
        for label, figures in result["modes"].items():
            extra = "".join(
                f"  {language} top-1 own {t['own']:.3f} any {t['any']:.3f}"
                for language, t in figures.get("top1", {}).items()
            )
            print(f"  {label:<14} nDCG@10 {figures['ndcg@10']:.4f}{extra}")


if __name__ == "__main__":
    main()
