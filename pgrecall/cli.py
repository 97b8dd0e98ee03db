"""The pgrecall command line. Each command imports only the side it needs."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from collections.abc import Callable

import psycopg

from pgrecall import database
from pgrecall.errors import PgRecallError
from pgrecall.logs import configure_logging
from pgrecall.settings import ENVIRONMENT_VARIABLES, Settings, load_settings

EXAMPLES = """examples:
  pgrecall index ~/notes                       index a folder (and drop what was deleted from it)
  pgrecall search "why did the deploy fail"    hybrid search
  pgrecall search E-4711 --mode keyword -k 3   exact terms only
  pgrecall search "retry policy" --path-prefix projects/ --json
  pgrecall status --json
"""


def _environment_help() -> str:
    lines = ["environment:"]
    lines += [f"  {name:<24} {text}" for name, text in ENVIRONMENT_VARIABLES.items()]
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pgrecall",
        description="Local-first memory: notes indexed in PostgreSQL, answered with hybrid search.",
        epilog=EXAMPLES + "\n" + _environment_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("-v", "--verbose", action="count", default=0, help="log more (-v info, -vv debug)")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    index = commands.add_parser("index", help="index files and folders through the job queue",
                                description="Scan folders, enqueue new, changed and deleted files, and work the queue until it is empty.",
                                epilog="example: pgrecall index ~/notes ~/Downloads/claude-export/conversations.json",
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    index.add_argument("paths", nargs="+", metavar="PATH")
    index.add_argument("--quiet", action="store_true", help="no progress bar")
    index.add_argument("--json", action="store_true", help="print the summary as JSON")

    search = commands.add_parser("search", help="hybrid search of the index",
                                 epilog='example: pgrecall search "postgres vacuum settings" -k 5 --json',
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    search.add_argument("query")
    search.add_argument("-k", type=int, default=10, help="number of hits (default: 10)")
    search.add_argument("--mode", choices=("hybrid", "vector", "keyword"), default="hybrid")
    search.add_argument("--no-enrich", action="store_true", help="search only the query as typed")
    search.add_argument("--path-prefix", help="only paths starting with this (relative, or absolute)")
    search.add_argument("--kind", help="only documents of this kind (markdown, text, claude_conversation)")
    search.add_argument("--root", help="only documents under this source root (absolute path)")
    search.add_argument("--since", help="only documents modified since this ISO date")
    search.add_argument("--meta", action="append", default=[], metavar="KEY=VALUE", help="front-matter filter, repeatable")
    search.add_argument("--json", action="store_true", help="print one JSON array of hits")

    status = commands.add_parser("status", help="documents, chunks, queue and failures")
    status.add_argument("--json", action="store_true")

    failures = commands.add_parser("failures", help="files that could not be indexed, with the reason")
    failures.add_argument("--json", action="store_true")

    db = commands.add_parser("db", help="the embedded database: url, start, stop")
    db.add_argument("action", choices=("url", "start", "stop"))

    commands.add_parser("migrate", help="apply the schema migrations (every command does this when needed)")
    return parser


def _url(settings: Settings, migrate: bool = True) -> str:
    url = database.database_url(settings)
    if migrate:
        from pgrecall.migrate import migrate as apply_migrations

        with database.connect(url) as conn:
            apply_migrations(conn)
    return url


def cmd_index(args: argparse.Namespace, settings: Settings) -> int:
    from pgrecall.worker.progress import progress_bar
    from pgrecall.worker.run import run_index

    url = _url(settings)
    progress = None if args.quiet or args.json else progress_bar
    summary = asyncio.run(run_index(settings, url, args.paths, progress=progress))
    result = {
        "enqueued": summary.files_enqueued,
        "removals_enqueued": summary.removals_enqueued,
        **{status: summary.statuses.get(status, 0) for status in ("indexed", "unchanged", "removed", "skipped", "failed")},
        "chunks": summary.chunks,
        "seconds": round(summary.seconds, 2),
        "chunks_per_second": round(summary.chunks_per_second, 1),
        "embedding_calls": summary.embed_calls,
    }
    if args.json:
        print(json.dumps(result))
        return 0
    print(
        f"{result['indexed']} indexed, {result['unchanged']} unchanged, {result['removed']} removed, "
        f"{result['skipped']} skipped, {result['failed']} failed; {result['chunks']} chunks in "
        f"{result['seconds']} s ({result['chunks_per_second']} chunks/s)"
    )
    for outcome in summary.failures[:20]:
        print(f"  {outcome.status}: {outcome.path}: {outcome.error}")
    if len(summary.failures) > 20:
        print(f"  … and {len(summary.failures) - 20} more: pgrecall failures")
    return 0


def _search_filters(args: argparse.Namespace) -> dict:
    filters: dict = {}
    if args.path_prefix:
        filters["path_prefix"] = args.path_prefix
    if args.kind:
        filters["kind"] = args.kind
    if args.root:
        filters["source_root"] = args.root
    if args.since:
        filters["modified_since"] = args.since
    if args.meta:
        from pgrecall.errors import InvalidInput

        metadata = {}
        for item in args.meta:
            key, sep, value = item.partition("=")
            if not sep or not key:
                raise InvalidInput(f"--meta takes KEY=VALUE, got {item!r}")
            metadata[key] = value
        filters["metadata"] = metadata
    return filters


def cmd_search(args: argparse.Namespace, settings: Settings) -> int:
    from pgrecall.api.search import Searcher

    searcher = Searcher(_url(settings), settings, pool_size=1)
    try:
        hits = searcher.search(args.query, k=args.k, filters=_search_filters(args), mode=args.mode, enrich_query=not args.no_enrich)
    finally:
        searcher.close()
    if args.json:
        out = [
            {
                "path": hit.path,
                "source_root": hit.source_root,
                "heading": hit.heading,
                "text": hit.text,
                "snippet": hit.snippet,
                "score": hit.score,
                "ranks": hit.ranks,
                "kind": hit.kind,
                "title": hit.title,
            }
            for hit in hits
        ]
        print(json.dumps(out, ensure_ascii=False))
        return 0
    if not hits:
        print("no results")
    for number, hit in enumerate(hits, 1):
        ranks = ", ".join(f"{arm} #{rank}" for arm, rank in hit.ranks.items() if rank is not None)
        print(f"{number}. {hit.path}  [{hit.score:.4f}; {ranks}]")
        if hit.heading:
            print(f"   {hit.heading}")
        print(f"   {hit.snippet}\n")
    return 0


def cmd_status(args: argparse.Namespace, settings: Settings) -> int:
    from pgrecall.api import store as read_store
    from pgrecall.worker.store import queue_status

    url = _url(settings)
    with database.connect(url) as conn:
        status = read_store.index_status(conn)
        status["queue"] = queue_status(conn)
    status["database"] = "embedded" if settings.embedded else "external"
    if args.json:
        print(json.dumps(status, default=str))
        return 0
    queue = status["queue"]
    print(f"database:   {status['database']} ({database.pgdata_path(settings) if settings.embedded else 'PGRECALL_DATABASE_URL'})")
    print(f"documents:  {status['documents']}")
    print(f"chunks:     {status['chunks']}")
    print(f"failed:     {status['failed']}   skipped: {status['skipped']}")
    print(f"queue:      {queue['todo']} waiting, {queue['doing']} running, {queue['failed']} failed jobs")
    print(f"last index: {status['last_indexed_at'] or 'never'}")
    return 0


def cmd_failures(args: argparse.Namespace, settings: Settings) -> int:
    from pgrecall.api import store as read_store

    with database.connect(_url(settings)) as conn:
        rows = read_store.failures(conn)
    if args.json:
        print(json.dumps(rows))
        return 0
    if not rows:
        print("no failures")
    for row in rows:
        print(f"{row['source_root']}/{row['path']}: [{row['error_stage']}] {row['error']}")
    return 0


def cmd_db(args: argparse.Namespace, settings: Settings) -> int:
    if args.action == "url":
        print(database.database_url(settings))
    elif args.action == "start":
        if not settings.embedded:
            print("PGRECALL_DATABASE_URL is set: nothing to start", file=sys.stderr)
            return 0
        print(_url(settings))
    elif args.action == "stop":
        if not settings.embedded:
            print("PGRECALL_DATABASE_URL is set: nothing to stop", file=sys.stderr)
            return 0
        print("stopped" if database.stop_embedded(settings) else "not running")
    return 0


def cmd_migrate(args: argparse.Namespace, settings: Settings) -> int:
    from pgrecall.migrate import migrate

    with database.connect(_url(settings, migrate=False)) as conn:
        applied = migrate(conn)
    print("applied: " + ", ".join(applied) if applied else "up to date")
    return 0


COMMANDS: dict[str, Callable[[argparse.Namespace, Settings], int]] = {
    "index": cmd_index,
    "search": cmd_search,
    "status": cmd_status,
    "failures": cmd_failures,
    "db": cmd_db,
    "migrate": cmd_migrate,
}


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        settings = load_settings()
        level = {0: logging.WARNING, 1: logging.INFO}.get(args.verbose, logging.DEBUG)
        configure_logging(level, settings.log_format)
        return COMMANDS[args.command](args, settings)
    except PgRecallError as exc:
        print(f"pgrecall: error: {exc}", file=sys.stderr)
        return 1
    except psycopg.Error as exc:
        message = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        print(f"pgrecall: database error: {message}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("pgrecall: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
