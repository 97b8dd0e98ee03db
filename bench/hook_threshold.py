"""The prompt hook's relevance threshold, chosen on SciFact: relevant answers kept, chit-chat silent.

    .venv/bin/python bench/hook_threshold.py [--data /work/shared/data/scifact] [--json]

Indexes SciFact (BEIR; the database and notes `pgrecall eval` uses, in PGRECALL_HOME) with the
configured embedder (onnx-int8 by default), then runs every test query and the 100 CHIT_CHAT
prompts below through the hook's own scoring (pgrecall.cli.hook.Recall.passages: the hybrid
hits, each with its cosine similarity to the prompt). The threshold is on that similarity, the
vector arm's raw score: the fused hybrid score is normalised per query (min-max under convex
fusion, ranks under RRF), so the best hit of "thanks" scores as high as the best hit of a real
question, and BM25 scores grow with the prompt's length and the corpus.

For a threshold t:
  answered: of the queries whose top hit is judged relevant (qrels), the share whose top hit
            reaches t, so the hook injects it;
  silent:   of the chit-chat prompts, the share where no hit reaches t, so the hook adds nothing
            (measured on the score alone, without the hook's skip of very short prompts; the
            share with that skip is printed as well).
The targets are answered >= 0.8 and silent >= 0.95; the chosen t is the middle of the range
of thresholds that meet both (rounded to 0.01), which leaves each the widest margin.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
from pathlib import Path

from pgrecall import hooks
from pgrecall.evaluate import eval_database_url, load_dataset, percentile, write_notes
from pgrecall.settings import load_settings

ANSWERED_TARGET = 0.8
SILENT_TARGET = 0.95

# Short prompts of an assistant session that no scientific abstract answers.
CHIT_CHAT = [
    "thanks",
    "thank you!",
    "yes",
    "no",
    "ok",
    "okay, go on",
    "go on",
    "continue",
    "lgtm",
    "looks good to me",
    "run the tests",
    "run the tests again",
    "fix it",
    "fix the failing test",
    "commit",
    "commit this",
    "commit and push",
    "what's next?",
    "what next",
    "next step",
    "do it",
    "yes please",
    "sounds good",
    "perfect, thanks",
    "great",
    "nice work",
    "try again",
    "that didn't work",
    "it still fails",
    "revert that",
    "undo the last change",
    "show me the diff",
    "open a PR",
    "push it",
    "merge it",
    "rebase on main",
    "format the code",
    "run ruff",
    "run the linter",
    "fix the lint errors",
    "add a test for that",
    "write the docstring",
    "rename it",
    "make it shorter",
    "simplify this",
    "explain that again",
    "why?",
    "how so?",
    "what do you mean?",
    "can you clarify?",
    "stop",
    "never mind",
    "good catch",
    "exactly",
    "right",
    "correct",
    "not quite",
    "almost there",
    "keep going",
    "carry on",
    "proceed",
    "go ahead",
    "ship it",
    "deploy it",
    "restart the server",
    "check the logs",
    "clear the cache",
    "install the dependencies",
    "update the README",
    "bump the version",
    "tag a release",
    "close the issue",
    "squash the commits",
    "amend the commit message",
    "run it",
    "build it",
    "retry",
    "same error",
    "still broken",
    "works now",
    "it works!",
    "done",
    "all good",
    "cool",
    "awesome",
    "let's move on",
    "back to the previous task",
    "what were we doing?",
    "summarize what you did",
    "any questions?",
    "please review",
    "review my changes",
    "can you check this file?",
    "print the output",
    "show me",
    "hello",
    "hi there",
    "good morning",
    "bye",
    "that's all for today",
]
assert len(CHIT_CHAT) == 100 and len(set(CHIT_CHAT)) == 100


def index_scifact(settings, directory: Path):
    from pgrecall.worker.run import run_index

    dataset = load_dataset(directory, "test")
    folder = settings.home / "eval" / dataset.name / "notes"
    mapping = write_notes(dataset, folder)
    url = eval_database_url(settings, dataset, fresh=False)
    summary = asyncio.run(run_index(settings, url, [str(folder)]))
    return dataset, mapping, url, summary


def measure(recall, dataset, mapping) -> tuple[list[float], list[float], list[float], int]:
    """The top hit's similarity of each query whose top hit is relevant; each chit-chat prompt's best
    similarity, with and without the hook's skip of short prompts (a skipped prompt scores -inf)."""
    relevant_tops: list[float] = []
    for query_id, query in dataset.queries.items():
        passages = recall.passages(query)
        if passages and dataset.qrels[query_id].get(mapping.get(passages[0].path.rsplit("/", 1)[-1], ""), 0) > 0:
            relevant_tops.append(passages[0].similarity)
    chit_best: list[float] = []
    hook_best: list[float] = []
    for prompt in CHIT_CHAT:
        best = max((p.similarity for p in recall.passages(prompt)), default=float("-inf"))
        chit_best.append(best)
        hook_best.append(best if hooks.worth_searching(prompt) else float("-inf"))
    return relevant_tops, chit_best, hook_best, len(dataset.queries)


def shares(t: float, relevant_tops, chit_best, hook_best) -> dict[str, float]:
    return {
        "threshold": round(t, 3),
        "answered": round(sum(s >= t for s in relevant_tops) / len(relevant_tops), 3),
        "silent": round(sum(s < t for s in chit_best) / len(chit_best), 3),
        "silent_with_skip": round(sum(s < t for s in hook_best) / len(hook_best), 3),
    }


def choose(relevant_tops: list[float], chit_best: list[float]) -> tuple[float, float, float]:
    """(lowest, highest, chosen): the range of thresholds meeting both targets, and its middle."""
    lowest = next(t / 100 for t in range(-100, 101) if sum(s < t / 100 for s in chit_best) / 100 >= SILENT_TARGET)
    feasible = [
        t / 100
        for t in range(-100, 101)
        if sum(s >= t / 100 for s in relevant_tops) >= ANSWERED_TARGET * len(relevant_tops)
    ]
    highest = max(feasible)
    return lowest, highest, round((lowest + highest) / 2, 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path("/work/shared/data/scifact"))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    from pgrecall.cli.hook import Recall
    from pgrecall.embedding import embedder_for
    from pgrecall.logs import configure_logging

    settings = load_settings()
    configure_logging()  # warnings only, on stderr: stdout is the result
    dataset, mapping, url, summary = index_scifact(settings, args.data)
    embedder = embedder_for(settings)
    recall = Recall.over(url, settings, embedder=embedder)
    try:
        relevant_tops, chit_best, hook_best, queries = measure(recall, dataset, mapping)
    finally:
        recall.close()
    lowest, highest, chosen = choose(relevant_tops, chit_best)
    grid = sorted({round(t / 100, 2) for t in range(20, 75, 5)} | {chosen, lowest, highest})
    result = {
        "dataset": dataset.name,
        "embedding": {"backend": embedder.backend, "space": embedder.space},
        "documents": len(mapping),
        "chunks": summary.chunks,
        "queries": queries,
        "queries_top_hit_relevant": len(relevant_tops),
        "chit_chat": len(chit_best),
        "relevant_top_similarity": {
            "p05": round(percentile(relevant_tops, 5), 3),
            "p20": round(percentile(relevant_tops, 20), 3),
            "median": round(statistics.median(relevant_tops), 3),
        },
        "chit_chat_best_similarity": {
            "median": round(statistics.median(chit_best), 3),
            "p95": round(percentile(chit_best, 95), 3),
            "max": round(max(chit_best), 3),
        },
        "meets_both": [lowest, highest] if lowest <= highest else None,
        "chosen": shares(chosen, relevant_tops, chit_best, hook_best),
        "table": [shares(t, relevant_tops, chit_best, hook_best) for t in grid],
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(
        f"{dataset.name}: {len(mapping)} documents, {summary.chunks} chunks, {embedder.backend}; "
        f"{queries} test queries, {len(relevant_tops)} with a relevant top hit; {len(chit_best)} chit-chat prompts"
    )
    print(f"relevant top hit similarity: {result['relevant_top_similarity']}")
    print(f"chit-chat best similarity:   {result['chit_chat_best_similarity']}")
    print(f"thresholds meeting both targets: {result['meets_both']}")
    print(f"{'threshold':>9}  {'answered':>8}  {'silent':>6}  {'silent (with skip)':>18}")
    for row in result["table"]:
        mark = "  <- chosen" if row["threshold"] == chosen else ""
        print(
            f"{row['threshold']:>9.2f}  {row['answered']:>8.3f}  {row['silent']:>6.3f}  {row['silent_with_skip']:>18.3f}{mark}"
        )


if __name__ == "__main__":
    main()
