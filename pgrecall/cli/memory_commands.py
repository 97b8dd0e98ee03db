"""`pgrecall remember`, `update`, `forget`, `restore` (the memory write path) and `memories` (reads the folder only)."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys

from pgrecall.cli import memories_subcommands as memory_history
from pgrecall.cli.common import command, key_values, text_argument, url
from pgrecall.settings import Settings

EXIT_NEAR_DUPLICATE = 3  # remember: memories already say nearly the same; nothing saved
EXIT_SECRET = 4  # remember, update: the text or title holds a secret; nothing saved


def add_parser(commands: argparse._SubParsersAction) -> None:
    remember = command(
        commands,
        "remember",
        run_remember,
        help="remember a fact or decision: a note in the memory folder, indexed before this returns",
        description="Write TEXT as a Markdown note of the memory folder ([memory] folder of the config file, "
        "default memories/ in PGRECALL_HOME) and index it, so the next search finds it. The same text "
        "remembered twice is one memory. Nothing is saved when memories already say nearly the same "
        "(exit 3, naming them: pgrecall update one, or --force) or when the text holds a secret "
        "(exit 4, naming its kind and place: --allow-secret).",
        epilog='example: pgrecall remember "Staging runs 3 replicas since the March outage" --tag ops '
        "--meta project=apollo\n         git log -1 --format=%B | pgrecall remember --title 'Last commit'",
    )
    remember.add_argument("text", nargs="?", help="the text; - or absent: read it from stdin")
    remember.add_argument("--title")
    remember.add_argument("--tag", action="append", default=[], help="repeatable")
    remember.add_argument(
        "--meta", action="append", default=[], metavar="KEY=VALUE", help="front-matter field (a string), repeatable"
    )
    remember.add_argument(
        "--project", help="the project it belongs to: its folder (taken to its git top-level) or a name"
    )
    remember.add_argument("--here", action="store_true", help="--project the current folder")
    remember.add_argument(
        "--force",
        action="store_true",
        help="save even when a memory says nearly the same (PGRECALL_MEMORY_DUPLICATE_SIMILARITY)",
    )
    remember.add_argument("--allow-secret", action="store_true", help="save even a text that holds a secret")
    remember.add_argument("--json", action="store_true", help="print the memory as JSON (a refusal too, on stdout)")

    update = command(
        commands,
        "update",
        run_update,
        help="rewrite a memory (its text, title or tags) and re-index it",
        epilog="example: pgrecall update 3f9c0a1b2c4d --text 'Staging runs 4 replicas' --tag ops",
    )
    update.add_argument("id", help="the id remember printed")
    update.add_argument("--text", help="the new text; - reads it from stdin")
    update.add_argument("--title")
    update.add_argument("--tag", action="append", default=None, help="the new tags (replace the old), repeatable")
    update.add_argument(
        "--expect",
        metavar="VERSION",
        help="the version you read (memories --json): refused, exit 1, if the memory changed since",
    )
    update.add_argument(
        "--allow-secret", action="store_true", help="save even a text that holds a secret (else exit 4)"
    )
    update.add_argument("--json", action="store_true", help="print the memory as JSON")

    forget = command(
        commands,
        "forget",
        run_forget,
        help="move a memory into the trash (out of the index; pgrecall restore brings it back)",
        description="Move the memory's note into the trash of the memory folder (.trash/, not indexed); "
        "after PGRECALL_MEMORY_TRASH_DAYS days a running service deletes it. --purge deletes it at once.",
        epilog="example: pgrecall forget 3f9c0a1b2c4d\n         pgrecall forget 3f9c0a1b2c4d --purge",
    )
    forget.add_argument("id", help="the id remember printed")
    forget.add_argument("--expect", metavar="VERSION", help="the version you read: refused if it changed since")
    forget.add_argument("--purge", action="store_true", help="delete for good (also a memory already in the trash)")
    forget.add_argument("--json", action="store_true", help="print the forgotten memory as JSON")

    restore = command(
        commands,
        "restore",
        run_restore,
        help="bring a forgotten memory back from the trash, with its id, and index it again",
        epilog="example: pgrecall restore 3f9c0a1b2c4d   (pgrecall memories --forgotten lists the ids)\n"
        "         pgrecall restore 3f9c0a1b2c4d --version 2",
    )
    restore.add_argument("id", help="the id of the forgotten memory")
    restore.add_argument(
        "--version",
        metavar="N",
        help="bring back what version N of its history held (pgrecall memories history ID), as a new version",
    )
    restore.add_argument("--json", action="store_true", help="print the memory as JSON")

    listing = command(
        commands,
        "memories",
        run_memories,
        help="list memories, newest first",
        epilog="example: pgrecall memories --since 2026-01-01 --tag ops --limit 20\n"
        "         pgrecall memories history 3f9c0a1b2c4d\n"
        "         pgrecall memories export --output memories.jsonl",
    )
    listing.add_argument("--since", help="only memories updated since this ISO date or time")
    listing.add_argument("--tag", action="append", default=[], help="only memories with this tag, repeatable")
    listing.add_argument("--limit", type=int, default=50, help="at most this many (default: 50)")
    listing.add_argument("--forgotten", action="store_true", help="the memories in the trash, newest forgotten first")
    listing.add_argument("--json", action="store_true", help="print one JSON array")
    memory_history.add_subcommands(listing)


def _service(settings: Settings):
    from pgrecall.memory.notes import folder_of
    from pgrecall.worker.memory.writer import MemoryService

    return MemoryService(settings, url(settings), folder_of(settings))


def _print_saved(saved, folder: str, as_json: bool, verb: str) -> None:
    from pgrecall.memory.client import resembles

    if saved.similar:  # saved as a new fact; the memories it resembles are named, on stderr as warnings are
        print(f"pgrecall: {resembles(saved.similar, 'cli')}", file=sys.stderr)
    if as_json:
        print(json.dumps(saved.to_json(), ensure_ascii=False))
        return
    if not saved.created and verb == "remembered":
        verb = "already remembered"
    print(f"{verb} {saved.memory.id} {folder}/{saved.memory.path}")
    if not saved.indexed:
        print("pgrecall: warning: the note is written; it is indexed once the database answers", file=sys.stderr)


def _secret_refused(exc, as_json: bool) -> int:
    if as_json:
        print(json.dumps({"error": str(exc), "secret": exc.kind, "where": exc.where}, ensure_ascii=False))
    print(f"pgrecall: error: {exc}", file=sys.stderr)
    return EXIT_SECRET


def run_remember(args: argparse.Namespace, settings: Settings) -> int:
    from pgrecall.contract import with_project
    from pgrecall.memory.request import remember_request

    text = text_argument(args.text)
    metadata = with_project(key_values(args.meta), os.getcwd() if args.here else args.project)

    from pgrecall.memory.client import NearDuplicate, SecretInMemory

    async def run():
        async with _service(settings) as service:
            request = remember_request(
                text,
                title=args.title,
                tags=args.tag,
                metadata=metadata,
                source="cli",
                force=args.force,
                allow_secret=args.allow_secret,
            )
            return service.root, await service.remember(request)

    try:
        folder, saved = asyncio.run(run())
    except NearDuplicate as exc:
        if args.json:
            print(json.dumps(exc.to_json("cli"), ensure_ascii=False))
        print(f"pgrecall: {exc.describe(exc.similar, 'cli')}", file=sys.stderr)
        return EXIT_NEAR_DUPLICATE
    except SecretInMemory as exc:
        return _secret_refused(exc, args.json)
    _print_saved(saved, folder, args.json, "remembered")
    return 0


def run_update(args: argparse.Namespace, settings: Settings) -> int:
    text = text_argument(args.text, required=False)

    from pgrecall.memory.client import SecretInMemory

    async def run():
        async with _service(settings) as service:
            return service.root, await service.update(
                args.id, text=text, title=args.title, tags=args.tag, expect=args.expect, allow_secret=args.allow_secret
            )

    try:
        folder, saved = asyncio.run(run())
    except SecretInMemory as exc:
        return _secret_refused(exc, args.json)
    _print_saved(saved, folder, args.json, "updated")
    return 0


def run_forget(args: argparse.Namespace, settings: Settings) -> int:
    async def run():
        async with _service(settings) as service:
            return service.root, await service.forget(args.id, expect=args.expect, purge=args.purge)

    folder, memory = asyncio.run(run())
    if args.json:
        print(json.dumps(memory.to_json(), ensure_ascii=False))
    elif args.purge:
        print(f"purged {memory.id} {folder}/{memory.path}")
    else:
        print(f"forgot {memory.id} {folder}/{memory.path}")
        print(f"pgrecall: moved to the trash; pgrecall restore {memory.id} brings it back", file=sys.stderr)
    return 0


def run_restore(args: argparse.Namespace, settings: Settings) -> int:
    async def run():
        async with _service(settings) as service:
            return service.root, await service.restore(args.id, version=args.version)

    folder, saved = asyncio.run(run())
    _print_saved(saved, folder, args.json, "restored")
    return 0


def run_memories(args: argparse.Namespace, settings: Settings) -> int:
    from pgrecall.memory.notes import folder_of, read_memories

    unreadable: list[str] = []
    chosen = read_memories(
        folder_of(settings),
        since=args.since,
        tags=args.tag,
        limit=args.limit,
        forgotten=args.forgotten,
        unreadable=unreadable,
    )
    for path in unreadable:
        print(f"pgrecall: warning: cannot read the memory note {path} (its permissions?): not listed", file=sys.stderr)
    if args.json:
        print(json.dumps([memory.to_json() for memory in chosen], ensure_ascii=False))
        return 0
    if not chosen:
        print("no forgotten memories" if args.forgotten else "no memories")
    for memory in chosen:
        first_line = memory.title or memory.text.splitlines()[0]
        tags = "".join(f"  #{tag}" for tag in memory.tags)
        when = f"forgotten {memory.forgotten}" if args.forgotten else memory.updated
        print(f"{memory.id}  {when}  {first_line[:80]}{tags}")
    return 0
