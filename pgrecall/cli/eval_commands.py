"""`pgrecall eval`: retrieval quality on a BEIR-format dataset, or conversational memory on a LoCoMo file."""

from __future__ import annotations

import argparse
import json
import sys

from pgrecall.cli.common import command
from pgrecall.settings import Settings


def add_parser(commands: argparse._SubParsersAction) -> None:
    evaluate = command(
        commands,
        "eval",
        run,
        help="retrieval quality on a BEIR-format dataset (nDCG@10, recall, MRR, latency) or a LoCoMo file",
        description="Index a BEIR dataset (corpus.jsonl, queries.jsonl, qrels/SPLIT.tsv) into a database of its "
        "own through the real pipeline and score every query in each search mode.\n"
        "A file (a JSON list, LoCoMo's format) is a conversational-memory benchmark instead: each conversation "
        "is indexed as claude.ai conversations (one per session) and each question searched within its "
        "conversation and across all of them; turn recall at a word budget, at k hits, and session recall.",
        epilog="examples:\n  pgrecall eval ../shared/data/scifact --split test --json\n"
        "  pgrecall eval ../shared/data/locomo-dev/locomo-dev.json --mode hybrid --scope within",
    )
    evaluate.add_argument("dataset", metavar="DATASET", help="a BEIR folder, or a LoCoMo .json file")
    evaluate.add_argument("--split", default="test", help="BEIR: the qrels split")
    evaluate.add_argument(
        "--scope",
        action="append",
        choices=("within", "across"),
        help="LoCoMo: search within the question's conversation, or across all (repeatable; default: both)",
    )
    evaluate.add_argument(
        "--mode",
        action="append",
        choices=("vector", "keyword", "hybrid", "hybrid:rrf", "hybrid:convex", "hybrid+enrich"),
        help="only these modes (repeatable; default: all; hybrid is the default fusion, PGRECALL_FUSION)",
    )
    evaluate.add_argument("--fresh", action="store_true", help="drop the eval database and index from scratch")
    evaluate.add_argument(
        "--hnsw-recall",
        action="store_true",
        help="also measure the HNSW index's recall@10 against exact search (the modes' figures always rank "
        "vectors exactly, so that two evals of the same data agree)",
    )
    evaluate.add_argument("--json", action="store_true", help="print one JSON object")


def run(args: argparse.Namespace, settings: Settings) -> int:
    from pathlib import Path

    from pgrecall.composition.evaluation import format_table, run_eval

    def say(message: str) -> None:
        print(f"pgrecall eval: {message}", file=sys.stderr)

    if Path(args.dataset).is_file():  # a BEIR dataset is a folder: a file is read as LoCoMo
        from pgrecall.composition import conversation_evaluation as evaluate_conversations

        result = evaluate_conversations.run_conversation_eval(
            settings,
            Path(args.dataset),
            fresh=args.fresh,
            modes=args.mode,
            scopes=args.scope,
            progress=say,
            hnsw_recall=args.hnsw_recall,
        )
        print(json.dumps(result) if args.json else evaluate_conversations.format_table(result))
        return 0
    result = run_eval(
        settings,
        Path(args.dataset),
        split=args.split,
        fresh=args.fresh,
        modes=args.mode,
        progress=say,
        hnsw_recall=args.hnsw_recall,
    )
    print(json.dumps(result) if args.json else format_table(result))
    return 0
