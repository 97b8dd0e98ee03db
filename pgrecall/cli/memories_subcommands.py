"""`pgrecall memories history ID`, `memories export`, `memories import FILE|FOLDER`: subcommands of `memories`."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

from pgrecall.cli.common import url
from pgrecall.settings import Settings


def add_subcommands(listing: argparse.ArgumentParser) -> None:
    actions = listing.add_subparsers(dest="memories_action", metavar="{history,export,import}")
    history = actions.add_parser(
        "history",
        help="every version of a memory: what it said before (pgrecall restore ID --version N brings one back)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="example: pgrecall memories history 3f9c0a1b2c4d\n         pgrecall restore 3f9c0a1b2c4d --version 2",
    )
    history.add_argument("id", help="the memory's id (also a forgotten one)")
    history.add_argument("--json", action="store_true", help="print one JSON array, with each version's text")
    history.set_defaults(run=run_history)

    export = actions.add_parser(
        "export",
        help="write every memory as JSON Lines (id, text, title, tags, metadata, times, project)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="example: pgrecall memories export --output memories.jsonl",
    )
    export.add_argument("--output", "-o", metavar="FILE", help="write to FILE (private, 0600) instead of stdout")
    export.add_argument("--json", action="store_true", help="with --output: print the summary as JSON")
    export.set_defaults(run=run_export)

    imports = actions.add_parser(
        "import",
        help="read memories back: an export (JSON Lines), basic-memory notes or a folder of Markdown files",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Idempotent: an id already there with the same text is left alone, as is a text already "
        "remembered; an id there with another text is left alone and named. Notes without an id "
        "(basic-memory's, plain Markdown) are remembered, their front matter's title and tags kept.",
        epilog="example: pgrecall memories import memories.jsonl\n         pgrecall memories import ~/basic-memory",
    )
    imports.add_argument("path", metavar="FILE|FOLDER")
    imports.add_argument("--json", action="store_true", help="print the summary as JSON")
    imports.set_defaults(run=run_import)


def run_history(args: argparse.Namespace, settings: Settings) -> int:
    from pgrecall.memory.notes import folder_of
    from pgrecall.memory.version_history import history

    memory_id = args.id.strip().lower()
    versions = history(folder_of(settings), args.id)
    if args.json:
        print(json.dumps([version.to_json(memory_id) for version in versions], ensure_ascii=False))
        return 0
    for version in versions:
        pending = "  (a hand edit, recorded at the next change)" if not version.recorded else ""
        first = version.first_line(memory_id)
        print(f"{version.n:>3}  {version.event:<8}  {version.time}  {version.hash}  {first[:70]}{pending}")
    return 0


def run_export(args: argparse.Namespace, settings: Settings) -> int:
    from pgrecall.memory.export import export_lines
    from pgrecall.memory.notes import folder_of

    unreadable: list[str] = []
    lines = export_lines(folder_of(settings), unreadable)
    for path in unreadable:
        print(
            f"pgrecall: warning: cannot read the memory note {path} (its permissions?): not exported", file=sys.stderr
        )
    data = "".join(f"{line}\n" for line in lines).encode("utf-8")
    if args.output is None:
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return 0
    from pgrecall.worker.private_files import write_atomically

    target = Path(args.output).expanduser().absolute()
    write_atomically(target, data)
    if args.json:
        print(json.dumps({"exported": len(lines), "output": str(target)}))
    else:
        print(f"exported {len(lines)} memories to {target}")
    return 0


def run_import(args: argparse.Namespace, settings: Settings) -> int:
    from pgrecall.memory.notes import folder_of
    from pgrecall.worker.memory.importer import import_path
    from pgrecall.worker.memory.writer import MemoryService

    source = Path(args.path).expanduser()

    async def run():
        async with MemoryService(settings, url(settings), folder_of(settings)) as service:
            return await import_path(service, source)

    summary = asyncio.run(run())
    for where, error in summary.failed:
        print(f"pgrecall: warning: {where}: {error}: not imported", file=sys.stderr)
    if args.json:
        print(json.dumps(summary.to_json(), ensure_ascii=False))
    else:
        print(summary.line(str(source)))
    return 1 if summary.failed else 0
