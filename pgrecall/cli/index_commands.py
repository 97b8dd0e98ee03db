"""`pgrecall index` and `pgrecall reembed`: work the job queue until it is empty, with a summary."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

from pgrecall.cli.common import command, load_model_early, url
from pgrecall.settings import Settings

SHOWN_FAILURES = 20


def add_parser(commands: argparse._SubParsersAction) -> None:
    index = command(
        commands,
        "index",
        run_index,
        help="index files and folders through the job queue",
        description="Scan folders, enqueue new, changed and deleted files, and work the queue until it is empty. "
        "Without PATH: the roots serve follows (the [[roots]] of the config file, and the memory folder). "
        "A file inside a root is indexed under that root.",
        epilog="examples: pgrecall index   (after pgrecall sources add notes ~/notes)\n"
        "          pgrecall index ~/notes ~/Downloads/claude-export/conversations.json",
    )
    index.add_argument("paths", nargs="*", metavar="PATH")
    index.add_argument("--quiet", action="store_true", help="no progress bar")
    index.add_argument("--json", action="store_true", help="print the summary as JSON")

    reembed = command(
        commands,
        "reembed",
        run_reembed,
        help="embed again what was embedded in another embedding space (model, backend, quantization)",
        description="Find every indexed file whose vectors are of another embedding space than this "
        "configuration's (PGRECALL_MODEL, PGRECALL_EMBED_BACKEND), or of none recorded, and index it "
        "again through the job queue, with progress. Searches refuse to compare vectors of two spaces; "
        "while this runs they search the part already embedded in theirs.",
        epilog="example: PGRECALL_EMBED_BACKEND=onnx-int8 pgrecall reembed",
    )
    reembed.add_argument("--quiet", action="store_true", help="no progress bar")
    reembed.add_argument("--json", action="store_true", help="print the summary as JSON")


def run_index(args: argparse.Namespace, settings: Settings) -> int:
    # From the start: the model's load overlaps the imports, the migration check and the plan,
    # which an edited note's index waited for before (a run that finds nothing changed joins it).
    loading = load_model_early(settings)
    try:
        from pgrecall.worker.progress import progress_bar
        from pgrecall.worker.run import run_index

        database_url = url(settings)
        progress = None if args.quiet or args.json else progress_bar
        summary = asyncio.run(run_index(settings, database_url, args.paths, progress=progress))
    finally:
        loading.join()
    return print_summary(args, summary)


def run_reembed(args: argparse.Namespace, settings: Settings) -> int:
    from pgrecall.worker.progress import progress_bar
    from pgrecall.worker.run import run_reembed

    database_url = url(settings)
    progress = None if args.quiet or args.json else progress_bar
    return print_summary(args, asyncio.run(run_reembed(settings, database_url, progress=progress)))


def summary_json(summary) -> dict:
    return {
        "enqueued": summary.files_enqueued,
        "removals_enqueued": summary.removals_enqueued,
        **{
            status: summary.statuses.get(status, 0)
            for status in ("indexed", "unchanged", "removed", "archived", "skipped", "failed")
        },
        "chunks": summary.chunks,
        "chunks_embedded": summary.chunks_embedded,
        "chunks_reused": summary.chunks_reused,
        "seconds": round(summary.seconds, 2),
        "chunks_per_second": round(summary.chunks_per_second, 1),
        "embedding_calls": summary.embed_calls,
        "unaccounted": summary.unaccounted,
    }


def print_summary(args: argparse.Namespace, summary) -> int:
    result = summary_json(summary)
    # A file neither indexed nor recorded with a reason must never pass for success.
    exit_code = 1 if summary.unaccounted else 0
    if args.json:
        print(json.dumps(result))
        return exit_code
    print(
        f"{result['indexed']} indexed, {result['unchanged']} unchanged, {result['removed']} removed, "
        + (f"{result['archived']} archived, " if result["archived"] else "")
        + f"{result['skipped']} skipped, {result['failed']} failed; {result['chunks']} chunks in "
        f"{result['seconds']} s ({result['chunks_per_second']} chunks/s), "
        f"{result['chunks_embedded']} chunks embedded, {result['chunks_reused']} reused"
    )
    for outcome in summary.failures[:SHOWN_FAILURES]:
        print(f"  {outcome.status}: {outcome.path}: {outcome.error}")
    if len(summary.failures) > SHOWN_FAILURES:
        print(f"  … and {len(summary.failures) - SHOWN_FAILURES} more: pgrecall failures")
    if summary.unaccounted:
        shown = ", ".join(summary.unaccounted[:5])
        print(
            f"pgrecall: error: {len(summary.unaccounted)} files neither indexed nor recorded: {shown}", file=sys.stderr
        )
    return exit_code
