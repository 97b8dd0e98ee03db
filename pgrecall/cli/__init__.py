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
from pgrecall.errors import PgRecallError, first_line
from pgrecall.logs import configure_logging
from pgrecall.settings import ENVIRONMENT_VARIABLES, Settings, load_settings

EXAMPLES = """examples:
  pgrecall index ~/notes                       index a folder (and drop what was deleted from it)
  pgrecall search "why did the deploy fail"    hybrid search
  pgrecall search E-4711 --mode keyword -k 3   exact terms only
  pgrecall search "retry policy" --path-prefix projects/ --json
  pgrecall remember "Deploys go out on Tuesdays: Friday deploys broke on-call twice." --tag ops
  pgrecall memories --tag ops                  the memories tagged ops, newest first
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

    index = commands.add_parser(
        "index",
        help="index files and folders through the job queue",
        description="Scan folders, enqueue new, changed and deleted files, and work the queue until it is empty.",
        epilog="example: pgrecall index ~/notes ~/Downloads/claude-export/conversations.json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    index.add_argument("paths", nargs="+", metavar="PATH")
    index.add_argument("--quiet", action="store_true", help="no progress bar")
    index.add_argument("--json", action="store_true", help="print the summary as JSON")

    reembed = commands.add_parser(
        "reembed",
        help="embed again what was embedded in another embedding space (model, backend, quantization)",
        description="Find every indexed file whose vectors are of another embedding space than this "
        "configuration's (PGRECALL_MODEL, PGRECALL_EMBED_BACKEND), or of none recorded, and index it "
        "again through the job queue, with progress. Searches refuse to compare vectors of two spaces; "
        "while this runs they search the part already embedded in theirs.",
        epilog="example: PGRECALL_EMBED_BACKEND=onnx-int8 pgrecall reembed",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    reembed.add_argument("--quiet", action="store_true", help="no progress bar")
    reembed.add_argument("--json", action="store_true", help="print the summary as JSON")

    search = commands.add_parser(
        "search",
        help="hybrid search of the index",
        epilog='example: pgrecall search "postgres vacuum settings" -k 5 --json',
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    search.add_argument("query")
    search.add_argument("-k", type=int, default=10, help="number of hits, 1 to 100 (default: 10)")
    search.add_argument("--mode", choices=("hybrid", "vector", "keyword"), default="hybrid")
    search.add_argument(
        "--fusion",
        choices=("rrf", "convex"),
        help="how the arms are fused: rrf (Reciprocal Rank Fusion) or convex (normalised scores) "
        "(default: PGRECALL_FUSION)",
    )
    enrichment = search.add_mutually_exclusive_group()
    enrichment.add_argument(
        "--enrich",
        dest="enrich",
        action="store_true",
        default=False,
        help="also search key-term variants of the query (WordPiece enrichment)",
    )
    enrichment.add_argument(
        "--no-enrich", dest="enrich", action="store_false", help="search only the query as typed (default)"
    )
    search.add_argument("--path-prefix", help="only paths starting with this (relative, or absolute)")
    search.add_argument("--kind", help="only documents of this kind (markdown, text, claude_conversation)")
    search.add_argument("--root", help="only documents of this root: its name (from serve/watch) or its absolute path")
    search.add_argument("--since", help="only documents modified since this ISO date")
    search.add_argument(
        "--meta", action="append", default=[], metavar="KEY=VALUE", help="front-matter filter, repeatable"
    )
    search.add_argument("--json", action="store_true", help="print one JSON array of hits")

    remember = commands.add_parser(
        "remember",
        help="remember a fact or decision: a note in the memory folder, indexed before this returns",
        description="Write TEXT as a Markdown note of the memory folder ([memory] folder of the config file, "
        "default memories/ in PGRECALL_HOME) and index it, so the next search finds it. The same text "
        "remembered twice is one memory.",
        epilog='example: pgrecall remember "Staging runs 3 replicas since the March outage" --tag ops '
        "--meta project=apollo\n         git log -1 --format=%B | pgrecall remember --title 'Last commit'",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    remember.add_argument("text", nargs="?", help="the text; - or absent: read it from stdin")
    remember.add_argument("--title")
    remember.add_argument("--tag", action="append", default=[], help="repeatable")
    remember.add_argument(
        "--meta", action="append", default=[], metavar="KEY=VALUE", help="front-matter field (a string), repeatable"
    )
    remember.add_argument("--json", action="store_true", help="print the memory as JSON")

    update = commands.add_parser(
        "update",
        help="rewrite a memory (its text, title or tags) and re-index it",
        epilog="example: pgrecall update 3f9c0a1b2c4d --text 'Staging runs 4 replicas' --tag ops",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    update.add_argument("id", help="the id remember printed")
    update.add_argument("--text", help="the new text; - reads it from stdin")
    update.add_argument("--title")
    update.add_argument("--tag", action="append", default=None, help="the new tags (replace the old), repeatable")
    update.add_argument("--json", action="store_true", help="print the memory as JSON")

    forget = commands.add_parser(
        "forget",
        help="delete a memory from the memory folder and the index",
        epilog="example: pgrecall forget 3f9c0a1b2c4d",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    forget.add_argument("id", help="the id remember printed")
    forget.add_argument("--json", action="store_true", help="print the forgotten memory as JSON")

    listing = commands.add_parser(
        "memories",
        help="list memories, newest first",
        epilog="example: pgrecall memories --since 2026-01-01 --tag ops --limit 20",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    listing.add_argument("--since", help="only memories updated since this ISO date or time")
    listing.add_argument("--tag", action="append", default=[], help="only memories with this tag, repeatable")
    listing.add_argument("--limit", type=int, default=50, help="at most this many (default: 50)")
    listing.add_argument("--json", action="store_true", help="print one JSON array")

    serve = commands.add_parser(
        "serve",
        help="watch folders and index every change, as a service (database, migrations, watcher, workers)",
        epilog="example: pgrecall serve ~/notes   (without PATH: the [[roots]] of the config file)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    serve.add_argument("paths", nargs="*", metavar="PATH")
    watch = commands.add_parser(
        "watch",
        help="only watch folders and enqueue changes (workers run elsewhere)",
        epilog="example: pgrecall watch ~/notes",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    watch.add_argument("paths", nargs="*", metavar="PATH")
    commands.add_parser(
        "worker",
        help="only work the queue (several may share one database)",
        epilog="example: PGRECALL_DATABASE_URL=postgresql://db.lan/pgrecall pgrecall worker",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )

    api = commands.add_parser(
        "api",
        help="serve search and memories over HTTP JSON",
        epilog="example: pgrecall api --port 8765; then curl 'http://127.0.0.1:8765/search?q=vacuum&k=3'\n"
        "         curl -X POST http://127.0.0.1:8765/memories -H 'content-type: application/json' "
        '-d \'{"text": "Deploys go out on Tuesdays"}\'',
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    api.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1; others need PGRECALL_API_TOKEN)"
    )
    api.add_argument("--port", type=int, default=8765, help="TCP port, 1-65535 (default: 8765)")
    api.add_argument(
        "--read-only", action="store_true", help="refuse memory writes (POST, PATCH, DELETE /memories) with 403"
    )
    mcp = commands.add_parser(
        "mcp",
        help="serve search and memories to AI assistants: a Model Context Protocol server over stdio",
        epilog="example (Claude Code): claude mcp add pgrecall -- ~/pgrecall/.venv/bin/pgrecall mcp",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    mcp.add_argument("--read-only", action="store_true", help="no remember, update_memory or forget tools")

    status = commands.add_parser("status", help="documents, chunks, queue and failures")
    status.add_argument("--json", action="store_true")

    failures = commands.add_parser("failures", help="files that could not be indexed, with the reason")
    failures.add_argument("--json", action="store_true")

    db = commands.add_parser("db", help="the embedded database: url, start, stop")
    db.add_argument("action", choices=("url", "start", "stop"))

    commands.add_parser("migrate", help="apply the schema migrations (every command does this when needed)")

    evaluate = commands.add_parser(
        "eval",
        help="retrieval quality on a BEIR-format dataset (nDCG@10, recall, MRR, latency)",
        description="Index a BEIR dataset (corpus.jsonl, queries.jsonl, qrels/SPLIT.tsv) into a database of its "
        "own through the real pipeline and score every query in each search mode.",
        epilog="example: pgrecall eval ../shared/data/scifact --split test --json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    evaluate.add_argument("dataset", metavar="DATASET_DIR")
    evaluate.add_argument("--split", default="test")
    evaluate.add_argument(
        "--mode",
        action="append",
        choices=("vector", "keyword", "hybrid", "hybrid:rrf", "hybrid:convex", "hybrid+enrich"),
        help="only these modes (repeatable; default: all; hybrid is the default fusion, PGRECALL_FUSION)",
    )
    evaluate.add_argument("--fresh", action="store_true", help="drop the eval database and index from scratch")
    evaluate.add_argument("--json", action="store_true", help="print one JSON object")
    return parser


def _url(settings: Settings, migrate: bool = True) -> str:
    if not migrate:
        return database.database_url(settings)
    from pgrecall.migrate import migrated_url

    return migrated_url(settings)


def cmd_index(args: argparse.Namespace, settings: Settings) -> int:
    from pgrecall.worker.progress import progress_bar
    from pgrecall.worker.run import run_index

    url = _url(settings)
    progress = None if args.quiet or args.json else progress_bar
    return _print_index_summary(args, asyncio.run(run_index(settings, url, args.paths, progress=progress)))


def cmd_reembed(args: argparse.Namespace, settings: Settings) -> int:
    from pgrecall.worker.progress import progress_bar
    from pgrecall.worker.run import run_reembed

    url = _url(settings)
    progress = None if args.quiet or args.json else progress_bar
    return _print_index_summary(args, asyncio.run(run_reembed(settings, url, progress=progress)))


def _print_index_summary(args: argparse.Namespace, summary) -> int:
    result = {
        "enqueued": summary.files_enqueued,
        "removals_enqueued": summary.removals_enqueued,
        **{
            status: summary.statuses.get(status, 0)
            for status in ("indexed", "unchanged", "removed", "skipped", "failed")
        },
        "chunks": summary.chunks,
        "seconds": round(summary.seconds, 2),
        "chunks_per_second": round(summary.chunks_per_second, 1),
        "embedding_calls": summary.embed_calls,
        "unaccounted": summary.unaccounted,
    }
    # A file neither indexed nor recorded with a reason must never pass for success.
    exit_code = 1 if summary.unaccounted else 0
    if args.json:
        print(json.dumps(result))
        return exit_code
    print(
        f"{result['indexed']} indexed, {result['unchanged']} unchanged, {result['removed']} removed, "
        f"{result['skipped']} skipped, {result['failed']} failed; {result['chunks']} chunks in "
        f"{result['seconds']} s ({result['chunks_per_second']} chunks/s)"
    )
    for outcome in summary.failures[:20]:
        print(f"  {outcome.status}: {outcome.path}: {outcome.error}")
    if len(summary.failures) > 20:
        print(f"  … and {len(summary.failures) - 20} more: pgrecall failures")
    if summary.unaccounted:
        shown = ", ".join(summary.unaccounted[:5])
        print(
            f"pgrecall: error: {len(summary.unaccounted)} files neither indexed nor recorded: {shown}", file=sys.stderr
        )
    return exit_code


def _search_filters(args: argparse.Namespace) -> dict:
    filters: dict = {}
    if args.path_prefix:
        filters["path_prefix"] = args.path_prefix
    if args.kind:
        filters["kind"] = args.kind
    if args.root:
        filters["source_root" if args.root.startswith("/") else "root"] = args.root
    if args.since:
        filters["modified_since"] = args.since
    if args.meta:
        filters["metadata"] = _key_values(args.meta)
    return filters


def cmd_search(args: argparse.Namespace, settings: Settings) -> int:
    from pgrecall.contract import search_request

    # Validated as every interface does (pgrecall.contract), before any connection.
    request = search_request(
        args.query, k=args.k, mode=args.mode, enrich=args.enrich, filters=_search_filters(args), fusion=args.fusion
    )
    searcher = _searcher(settings, pool_size=1)
    try:
        hits = searcher.run(request)
    finally:
        searcher.close()
    if args.json:
        print(json.dumps([hit.to_json() for hit in hits], ensure_ascii=False))
        return 0
    if not hits:
        print("no results")
    for number, hit in enumerate(hits, 1):
        ranks = ", ".join(
            f"{arm} #{rank}"
            + (f" {hit.arm_scores[arm]:.2f}" if hit.arm_scores and hit.arm_scores.get(arm) is not None else "")
            for arm, rank in hit.ranks.items()
            if rank is not None
        )
        print(f"{number}. {hit.path}  [{hit.score:.4f}; {ranks}]")
        if hit.heading:
            print(f"   {hit.heading}")
        print(f"   {hit.snippet}\n")
    return 0


def _memory_service(settings: Settings):
    from pgrecall.api.memories import folder_of
    from pgrecall.worker.memory_service import MemoryService

    return MemoryService(settings, _url(settings), folder_of(settings))


def _text_argument(text: str | None, required: bool = True) -> str | None:
    """TEXT as given; from stdin when it is - (or absent, and stdin is not a terminal)."""
    from pgrecall.errors import InvalidInput

    if text == "-" or (text is None and required and not sys.stdin.isatty()):
        return sys.stdin.read()
    if text is None and required:
        raise InvalidInput("give the text as an argument, or pipe it on stdin")
    return text


def _key_values(items: list[str]) -> dict[str, str]:
    from pgrecall.errors import InvalidInput

    metadata = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise InvalidInput(f"--meta takes KEY=VALUE, got {item!r}")
        metadata[key] = value
    return metadata


def _print_saved(saved, folder: str, as_json: bool, verb: str) -> None:
    if as_json:
        print(json.dumps(saved.to_json(), ensure_ascii=False))
        return
    if not saved.created and verb == "remembered":
        verb = "already remembered"
    print(f"{verb} {saved.memory.id} {folder}/{saved.memory.path}")
    if not saved.indexed:
        print("pgrecall: warning: the note is written; it is indexed once the database answers", file=sys.stderr)


def cmd_remember(args: argparse.Namespace, settings: Settings) -> int:
    text = _text_argument(args.text)
    metadata = _key_values(args.meta)

    async def run():
        async with _memory_service(settings) as service:
            return service.root, await service.remember(
                text, title=args.title, tags=args.tag, metadata=metadata, source="cli"
            )

    folder, saved = asyncio.run(run())
    _print_saved(saved, folder, args.json, "remembered")
    return 0


def cmd_update(args: argparse.Namespace, settings: Settings) -> int:
    text = _text_argument(args.text, required=False)

    async def run():
        async with _memory_service(settings) as service:
            return service.root, await service.update(args.id, text=text, title=args.title, tags=args.tag)

    folder, saved = asyncio.run(run())
    _print_saved(saved, folder, args.json, "updated")
    return 0


def cmd_forget(args: argparse.Namespace, settings: Settings) -> int:
    async def run():
        async with _memory_service(settings) as service:
            return service.root, await service.forget(args.id)

    folder, memory = asyncio.run(run())
    if args.json:
        print(json.dumps(memory.to_json(), ensure_ascii=False))
    else:
        print(f"forgot {memory.id} {folder}/{memory.path}")
    return 0


def cmd_memories(args: argparse.Namespace, settings: Settings) -> int:
    from pgrecall.api.memories import folder_of, read_memories

    chosen = read_memories(folder_of(settings), since=args.since, tags=args.tag, limit=args.limit)
    if args.json:
        print(json.dumps([memory.to_json() for memory in chosen], ensure_ascii=False))
        return 0
    if not chosen:
        print("no memories")
    for memory in chosen:
        first_line = memory.title or memory.text.splitlines()[0]
        tags = "".join(f"  #{tag}" for tag in memory.tags)
        print(f"{memory.id}  {memory.updated}  {first_line[:80]}{tags}")
    return 0


def _run_service(args: argparse.Namespace, settings: Settings, watch: bool, work: bool) -> int:
    from pgrecall import roots as roots_module
    from pgrecall.worker.service import run_service

    roots = []
    if watch:  # the memory folder is always watched, as the root "memories"
        roots = roots_module.with_memories(
            roots_module.resolve(getattr(args, "paths", []), settings.config_file, required=False),
            roots_module.memory_folder(settings.config_file, settings.home),
        )
    url = _url(settings)
    asyncio.run(run_service(settings, url, roots, watch=watch, work=work))
    return 0


def cmd_serve(args: argparse.Namespace, settings: Settings) -> int:
    return _run_service(args, settings, watch=True, work=True)


def cmd_watch(args: argparse.Namespace, settings: Settings) -> int:
    return _run_service(args, settings, watch=True, work=False)


def cmd_worker(args: argparse.Namespace, settings: Settings) -> int:
    return _run_service(args, settings, watch=False, work=True)


def _searcher(settings: Settings, pool_size: int):
    from pgrecall.api.search import Searcher, search_url

    # Searches never migrate and need no write rights: the embedded server is started if
    # needed, an index never set up is one line (IndexNotSetUp), and they log in as the
    # reader role, which cannot write (pgrecall.api.reader).
    return Searcher(search_url(settings), settings, pool_size=pool_size)


def _memory_startup(settings: Settings):
    """The memory client (the write path: the database migrated), built by a Startup, in the background."""
    from pgrecall.api.startup import Startup

    def open_client():
        from pgrecall.api.memories import folder_of, writable_url
        from pgrecall.worker.memory_service import MemoryClient

        return MemoryClient(settings, writable_url(settings), folder_of(settings))

    return Startup(open_client, warm=None, name="memories", what="database and memory folder")


def cmd_api(args: argparse.Namespace, settings: Settings) -> int:
    from pgrecall.api import http
    from pgrecall.api.memories import folder_of

    http.check_binding(args.host, settings.api_token, args.port)
    searcher = _searcher(settings, pool_size=8)
    # Opened by the first write (it migrates the database; reads never do), never when read-only.
    memories = None if args.read_only else _memory_startup(settings)
    try:
        http.serve(
            searcher,
            args.host,
            args.port,
            settings.api_token,
            memories=memories,
            read_only=args.read_only,
            memory_folder=folder_of(settings),
        )
    finally:
        searcher.close()
        if memories is not None:
            memories.close()
    return 0


def cmd_mcp(args: argparse.Namespace, settings: Settings) -> int:
    from pgrecall.api.mcp_server import serve_stdio
    from pgrecall.api.memories import folder_of
    from pgrecall.api.startup import Startup

    def load_model() -> None:
        from pgrecall.embedding import get_embedder

        get_embedder(settings.model, settings.embed_batch_size).embed_batch(["pgrecall"])  # the Searcher's own

    memories = None if args.read_only else _memory_startup(settings)

    def open_searcher():
        if memories is not None and not settings.search_database_url:
            memories.wait()  # its migration first, so that a fresh home has an index; its failure is its own
        return _searcher(settings, pool_size=2)

    # The handshake is answered at once; the database, the model and the memory client start in
    # the background (after the SDK's import: started before it, they only slowed it down), tool calls wait.
    startup = Startup(open_searcher, preload=load_model)
    if memories is not None:
        memories.start()
    startup.start()
    serve_stdio(startup, memories, folder_of(settings))
    return 0


def cmd_status(args: argparse.Namespace, settings: Settings) -> int:
    from pgrecall import status as status_module
    from pgrecall.api.memories import folder_of
    from pgrecall.embedding import get_embedder
    from pgrecall.worker.memories import MemoryFolder
    from pgrecall.worker.scan import iter_files
    from pgrecall.worker.watch import describe_watch

    with database.connect(_url(settings)) as conn:
        status = status_module.report(
            conn,
            settings,
            count_files=lambda folder: sum(1 for _ in iter_files(folder)),
            memory_folder=folder_of(settings),
            count_memories=lambda folder: sum(1 for _ in MemoryFolder(folder).memories()),
            embedding_space=get_embedder(settings.model, settings.embed_batch_size, settings.embed_backend).space,
        )
    if args.json:
        print(json.dumps(status, default=str))
        return 0
    queue = status["queue"]
    print(
        f"database:   {status['database']} ({database.pgdata_path(settings) if settings.embedded else 'PGRECALL_DATABASE_URL'})"
    )
    print(f"documents:  {status['documents']}")
    print(f"chunks:     {status['chunks']}")
    print(f"failed:     {status['failed']}   skipped: {status['skipped']}")
    oldest = f", oldest waiting {queue['oldest_waiting_age_s']} s" if queue["oldest_waiting_age_s"] is not None else ""
    print(f"queue:      {queue['todo']} waiting, {queue['doing']} running, {queue['failed']} failed jobs{oldest}")
    if queue["stalled"]:
        print(
            f"stalled:    {queue['stalled']} running jobs of a worker that stopped answering;"
            " the next index, serve or worker runs them again"
        )
    print(f"last index: {status['last_indexed_at'] or 'never'}")
    for space in status["embedding_spaces"]:
        current = " (this configuration's)" if space["space"] == status["embedding_space"] else ""
        name = space["space"] or "not recorded"
        print(f"embedded:   {space['documents']} documents, {space['chunks']} chunks in {name}{current}")
    if status["documents_to_reembed"]:
        print(
            f"reembed:    {status['documents_to_reembed']} documents of another embedding space than "
            f"{status['embedding_space']}: pgrecall reembed, or the next serve reconciliation, embeds them again"
        )
    memories = status["memories"]
    print(f"memories:   {memories['count']} in {memories['folder']}, {memories['indexed']} indexed")
    for root in status["roots"]:
        label = f"{root['name']} ({root['path']})" if root["name"] else root["path"]
        files = root["files"] if root["files"] is not None else "?"
        print(
            f"root:       {label}: {root['indexed']} of {files} files indexed, last {root['last_indexed_at'] or 'never'}"
        )
        print(f"  watch:    {describe_watch(root['watch_mode'], root['watcher_seen_at'], root['last_event_at'])}")
    return 0


def cmd_failures(args: argparse.Namespace, settings: Settings) -> int:
    from pgrecall import status

    with database.connect(_url(settings)) as conn:
        rows = status.failures(conn)
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


def cmd_eval(args: argparse.Namespace, settings: Settings) -> int:
    from pathlib import Path

    from pgrecall.evaluate import format_table, run_eval

    def say(message: str) -> None:
        print(f"pgrecall eval: {message}", file=sys.stderr)

    result = run_eval(settings, Path(args.dataset), split=args.split, fresh=args.fresh, modes=args.mode, progress=say)
    print(json.dumps(result) if args.json else format_table(result))
    return 0


COMMANDS: dict[str, Callable[[argparse.Namespace, Settings], int]] = {
    "serve": cmd_serve,
    "api": cmd_api,
    "mcp": cmd_mcp,
    "watch": cmd_watch,
    "worker": cmd_worker,
    "eval": cmd_eval,
    "index": cmd_index,
    "reembed": cmd_reembed,
    "search": cmd_search,
    "remember": cmd_remember,
    "update": cmd_update,
    "forget": cmd_forget,
    "memories": cmd_memories,
    "status": cmd_status,
    "failures": cmd_failures,
    "db": cmd_db,
    "migrate": cmd_migrate,
}


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        settings = load_settings()
        quiet = logging.INFO if args.command in ("serve", "watch", "worker") else logging.WARNING
        level = {0: quiet, 1: logging.INFO}.get(args.verbose, logging.DEBUG)
        configure_logging(level, settings.log_format)
        return COMMANDS[args.command](args, settings)
    except PgRecallError as exc:
        print(f"pgrecall: error: {exc}", file=sys.stderr)
        return 1
    except psycopg.Error as exc:
        print(f"pgrecall: database error: {first_line(exc)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("pgrecall: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
