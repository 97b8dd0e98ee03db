"""The prompt hook's relevance threshold, chosen on SciFact: relevant answers kept, chit-chat silent.

    .venv/bin/python bench/hook_threshold.py [--data /work/shared/data/scifact] [--json]

Indexes SciFact (BEIR; the database and notes `pgrecall eval` uses, in PGRECALL_HOME) with the
configured embedder (onnx-int8 by default), then runs every test query and the 100 CHIT_CHAT
prompts below through the hook's own scoring (pgrecall.cli.hook.Recall.passages: the hybrid
hits, each with its cosine similarity to the prompt). The threshold is on that similarity, the
vector arm's raw score: the fused hybrid score is normalised per query (min-max under convex
fusion, ranks under RRF), so the best hit of "thanks" scores as high as the best hit of a real
question, and BM25 scores grow with the prompt's length and the corpus.

The hook injects a passage when its similarity reaches t, or when it holds an identifier the
prompt names (E-4711, config.toml: pgrecall.claude_integration.hooks.relevant); the shares below go through that
same function. For a threshold t:
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

from harness.timing import percentile

from pgrecall.claude_integration import hooks
from pgrecall.composition.evaluation import eval_database_url, load_dataset, write_notes
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


def measure(recall, dataset, mapping) -> tuple[list[list[hooks.Passage]], list[list[hooks.Passage]]]:
    """The passages of each query whose top hit is judged relevant, and of each chit-chat prompt."""
    answerable: list[list[hooks.Passage]] = []
    for query_id, query in dataset.queries.items():
        passages = recall.passages(query)
        if passages and dataset.qrels[query_id].get(mapping.get(passages[0].path.rsplit("/", 1)[-1], ""), 0) > 0:
            answerable.append(passages)
    return answerable, [recall.passages(prompt) for prompt in CHIT_CHAT]


def answered(t: float, answerable) -> float:
    """The share of queries whose relevant top hit the hook injects at threshold t."""
    return sum(hooks.relevant(passages, t)[:1] == passages[:1] for passages in answerable) / len(answerable)


def answered_by_similarity(t: float, answerable) -> float:
    """The same share without the identifier rule: the similarity alone."""
    return sum(passages[0].similarity >= t for passages in answerable) / len(answerable)


def silent(t: float, chit_chat, skip: bool = False) -> float:
    """The share of chit-chat prompts for which the hook adds nothing at threshold t."""
    quiet = [
        (skip and not hooks.worth_searching(prompt)) or not hooks.relevant(passages, t)
        for prompt, passages in zip(CHIT_CHAT, chit_chat, strict=True)
    ]
    return sum(quiet) / len(quiet)


def shares(t: float, answerable, chit_chat) -> dict[str, float]:
    return {
        "threshold": round(t, 3),
        "answered": round(answered(t, answerable), 3),
        "answered_by_similarity": round(answered_by_similarity(t, answerable), 3),
        "silent": round(silent(t, chit_chat), 3),
        "silent_with_skip": round(silent(t, chit_chat, skip=True), 3),
    }


def choose(answerable, chit_chat) -> tuple[float, float, float]:
    """(lowest, highest, chosen): the range of thresholds (by 0.01) meeting both targets, and its middle."""
    grid = [t / 100 for t in range(-100, 101)]
    lowest = min((t for t in grid if silent(t, chit_chat) >= SILENT_TARGET), default=1.0)
    highest = max((t for t in grid if answered(t, answerable) >= ANSWERED_TARGET), default=-1.0)
    return lowest, highest, round((lowest + highest) / 2, 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path("/work/shared/data/scifact"))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    from pgrecall.cli.hook_commands import Recall
    from pgrecall.embedders.embedding import embedder_for
    from pgrecall.logs import configure_logging

    settings = load_settings()
    configure_logging()  # warnings only, on stderr: stdout is the result
    dataset, mapping, url, summary = index_scifact(settings, args.data)
    embedder = embedder_for(settings)
    recall = Recall.over(url, settings, embedder=embedder)
    try:
        answerable, chit_chat = measure(recall, dataset, mapping)
        with recall.searcher.pool.connection() as conn:
            chunks = conn.execute("SELECT count(*) FROM pgrecall.chunks").fetchone()[0]
    finally:
        recall.close()
    lowest, highest, chosen = choose(answerable, chit_chat)
    relevant_tops = [passages[0].similarity for passages in answerable]
    chit_best = [max((p.similarity for p in passages), default=-1.0) for passages in chit_chat]
    grid = sorted({round(t / 100, 2) for t in range(20, 75, 5)} | {chosen, lowest, highest})
    result = {
        "dataset": dataset.name,
        "embedding": {"backend": embedder.backend, "space": embedder.space},
        "documents": len(mapping),
        "chunks": chunks,
        "chunks_embedded_now": summary.chunks,
        "queries": len(dataset.queries),
        "queries_top_hit_exact": sum(passages[0].exact for passages in answerable),
        "chit_chat_exact": sum(any(p.exact for p in passages) for passages in chit_chat),
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
        "chosen": shares(chosen, answerable, chit_chat),
        "table": [shares(t, answerable, chit_chat) for t in grid],
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(
        f"{dataset.name}: {len(mapping)} documents, {chunks} chunks, {embedder.backend}; "
        f"{result['queries']} test queries, {len(relevant_tops)} with a relevant top hit; {len(chit_best)} chit-chat prompts"
    )
    print(f"relevant top hit similarity: {result['relevant_top_similarity']}")
    print(f"chit-chat best similarity:   {result['chit_chat_best_similarity']}")
    print(f"thresholds meeting both targets: {result['meets_both']}")
    print(f"{'threshold':>9}  {'answered':>8}  {'(similarity only)':>17}  {'silent':>6}  {'silent (with skip)':>18}")
    for row in result["table"]:
        mark = "  <- chosen" if row["threshold"] == chosen else ""
        print(
            f"{row['threshold']:>9.2f}  {row['answered']:>8.3f}  {row['answered_by_similarity']:>17.3f}  "
            f"{row['silent']:>6.3f}  {row['silent_with_skip']:>18.3f}{mark}"
        )


if __name__ == "__main__":
    main()
