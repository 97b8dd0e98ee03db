"""`pgrecall sources add|list|remove`: the `[[roots]]` of the config file, edited in place.

The file is rewritten atomically (a temporary file beside it, fsync, rename), through
tomlkit, so the user's other entries, comments and layout stay as they were.
"""

from __future__ import annotations

import argparse
import os
import secrets
from pathlib import Path

import tomlkit

from pgrecall.cli.common import command
from pgrecall.errors import ConfigurationError, InvalidInput
from pgrecall.roots import is_plain_name
from pgrecall.settings import Settings

# Sources pgrecall knows by name: where they live and whether they are archive roots.
KNOWN_SOURCES = {
    # Claude Code deletes its transcripts after cleanupPeriodDays (30 by default): kept.
    "claude-code": {"path": "~/.claude/projects", "archive": True},
}
FILE_MODE = 0o600


def add_parser(commands: argparse._SubParsersAction) -> None:
    sources = command(
        commands,
        "sources",
        None,
        help="add, list or remove the folders serve follows (the [[roots]] of the config file)",
        epilog="examples: pgrecall sources add claude-code [--path FOLDER] [--name NAME]\n"
        "          pgrecall sources list [--json]\n"
        "          pgrecall sources remove NAME",
    )
    actions = sources.add_subparsers(dest="action", required=True, metavar="ACTION")
    add = actions.add_parser("add", help="add a known source as a root", description=_add_description())
    add.add_argument("source", choices=sorted(KNOWN_SOURCES), help="the source")
    add.add_argument("--path", help="its folder, if not the usual one")
    add.add_argument("--name", help="the root's name (default: the source's)")
    add.set_defaults(run=run_add)
    listing = actions.add_parser("list", help="the roots of the config file")
    listing.add_argument("--json", action="store_true", help="print them as JSON")
    listing.set_defaults(run=run_list)
    remove = actions.add_parser("remove", help="remove a root from the config file (its archive stays on disk)")
    remove.add_argument("name", help="the root's name")
    remove.set_defaults(run=run_remove)


def _add_description() -> str:
    lines = ["Add a root to the config file; serve follows it from its next start. Known sources:"]
    for name, source in KNOWN_SOURCES.items():
        kept = ", an archive root (what the source deletes is kept)" if source["archive"] else ""
        lines.append(f"  {name}: {source['path']}{kept}")
    return "\n".join(lines)


def read_document(config_file: Path) -> tomlkit.TOMLDocument:
    if not config_file.is_file():
        return tomlkit.document()
    try:
        return tomlkit.parse(config_file.read_text(encoding="utf-8"))
    except (tomlkit.exceptions.TOMLKitError, UnicodeDecodeError) as exc:
        raise ConfigurationError(f"{config_file}: {exc}") from None


def write_document(config_file: Path, document: tomlkit.TOMLDocument) -> None:
    """Atomically: a reader sees the old file or the new one, never half of one."""
    config_file.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    mode = config_file.stat().st_mode & 0o777 if config_file.is_file() else FILE_MODE
    temporary = config_file.parent / f".{config_file.name}.{secrets.token_hex(4)}.tmp"
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            file.write(tomlkit.dumps(document))
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, config_file)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def _entries(document: tomlkit.TOMLDocument) -> list:
    entries = document.get("roots", [])
    if not isinstance(entries, list):
        raise ConfigurationError("roots must be a list of [[roots]] tables")
    return entries


def _name_of(entry) -> str:
    return str(entry.get("name") or Path(str(entry.get("path", ""))).name)


def add_source(config_file: Path, source: str, path: str | None = None, name: str | None = None) -> dict:
    """Add the known `source` to the config file's [[roots]]; returns the entry added."""
    known = KNOWN_SOURCES[source]
    name = name or source
    raw_path = path or known["path"]
    if not Path(raw_path).expanduser().is_dir():
        raise InvalidInput(f"not a folder: {raw_path} (give another with --path)")
    if known["archive"] and not is_plain_name(name):
        raise InvalidInput(f"an archive root's name must be a plain folder name, not {name!r}")
    document = read_document(config_file)
    entries = _entries(document)
    if any(_name_of(entry) == name for entry in entries):
        raise InvalidInput(f"a root named {name} is already in {config_file}")
    entry = tomlkit.table()
    entry["name"] = name
    entry["path"] = raw_path
    if known["archive"]:
        entry["archive"] = True
    if "roots" in document:
        document["roots"].append(entry)
    else:
        tables = tomlkit.aot()
        tables.append(entry)
        document["roots"] = tables
    write_document(config_file, document)
    return {"name": name, "path": raw_path, "archive": known["archive"]}


def remove_source(config_file: Path, name: str) -> None:
    document = read_document(config_file)
    entries = _entries(document)
    for number, entry in enumerate(entries):
        if _name_of(entry) == name:
            del entries[number]
            break
    else:
        raise InvalidInput(f"no root named {name} in {config_file}")
    if not entries:
        del document["roots"]
    write_document(config_file, document)


def list_sources(config_file: Path) -> list[dict]:
    return [
        {"name": _name_of(entry), "path": str(entry.get("path")), "archive": bool(entry.get("archive", False))}
        for entry in _entries(read_document(config_file))
    ]


def run_add(args: argparse.Namespace, settings: Settings) -> int:
    entry = add_source(settings.config_file, args.source, args.path, args.name)
    kept = "; an archive root: what the source deletes is kept" if entry["archive"] else ""
    print(f"added root {entry['name']} ({entry['path']}) to {settings.config_file}{kept}")
    print("pgrecall serve follows it from its next start")
    return 0


def run_list(args: argparse.Namespace, settings: Settings) -> int:
    import json

    entries = list_sources(settings.config_file)
    if args.json:
        print(json.dumps(entries))
        return 0
    for entry in entries:
        print("\t".join([entry["name"], entry["path"], *(["archive"] if entry["archive"] else [])]))
    return 0


def run_remove(args: argparse.Namespace, settings: Settings) -> int:
    remove_source(settings.config_file, args.name)
    print(f"removed root {args.name} from {settings.config_file}")
    return 0
