"""`pgrecall recent`: what was remembered or discussed lately, by the documents' own time."""

from __future__ import annotations

import argparse
import json
import os

from pgrecall import kinds
from pgrecall.cli.common import command, searcher
from pgrecall.contract import DEFAULT_RECENT_DAYS, DEFAULT_RECENT_LIMIT, TIME_FORMS
from pgrecall.settings import Settings


def add_parser(commands: argparse._SubParsersAction) -> None:
    recent = command(
        commands,
        "recent",
        run,
        help="what was remembered or discussed lately, newest first",
        description="Memories, notes, Claude Code sessions and conversations by their own time (a memory's "
        "creation, a session's or conversation's last message, else the file's modification), newest first. "
        "Reads the index only.",
        epilog="examples: pgrecall recent --days 3\n          pgrecall recent --here --kind claude_code_session --json",
    )
    project = recent.add_mutually_exclusive_group()
    project.add_argument("--project", help="only this project's documents: its folder or its name")
    project.add_argument("--here", action="store_true", help="--project the current folder")
    when = recent.add_mutually_exclusive_group()
    when.add_argument(
        "--days", type=int, default=DEFAULT_RECENT_DAYS, help=f"how far back (default: {DEFAULT_RECENT_DAYS})"
    )
    when.add_argument("--since", help=f"instead of --days: {TIME_FORMS}")
    recent.add_argument("--kind", help=f"only documents of this kind ({', '.join(kinds.SEARCHABLE)})")
    recent.add_argument(
        "--limit", type=int, default=DEFAULT_RECENT_LIMIT, help=f"at most this many (default: {DEFAULT_RECENT_LIMIT})"
    )
    recent.add_argument("--json", action="store_true", help="print one JSON array")


def run(args: argparse.Namespace, settings: Settings) -> int:
    from pgrecall.contract import recent_request

    request = recent_request(
        project=os.getcwd() if args.here else args.project,
        days=args.days,
        kind=args.kind,
        limit=args.limit,
        since=args.since,
    )
    index = searcher(settings, pool_size=1)
    try:
        found = index.recent(request)
    finally:
        index.close()
    if args.json:
        print(json.dumps([document.to_json() for document in found], ensure_ascii=False))
        return 0
    if not found:
        print("nothing since " + request.since.isoformat(timespec="minutes"))
    for document in found:
        memory = f"  memory {document.memory_id}" if document.memory_id else ""
        print(f"{document.occurred_at.isoformat(timespec='minutes')}  {document.kind}  {document.title or ''}{memory}")
        print(f"   {document.source_root}/{document.path}")
    return 0
