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

from pgrecall import roots
from pgrecall.cli.common import command
from pgrecall.errors import ConfigurationError, InvalidInput
from pgrecall.roots import is_plain_name
from pgrecall.settings import Settings

# Sources pgrecall knows by name: where they live (None: the folder must be given) and whether
# they are archive roots.
KNOWN_SOURCES = {
    # Claude Code deletes its transcripts after cleanupPeriodDays (30 by default): kept.
    "claude-code": {"path": "~/.claude/projects", "archive": True},
    # Any folder of notes (Markdown, text, exports): followed as it is.
    "notes": {"path": None, "archive": False},
}
FILE_MODE = 0o600


def add_parser(commands: argparse._SubParsersAction) -> None:
    sources = command(
        commands,
        "sources",
        None,
        help="add, list or remove the folders serve, watch and index follow (the [[roots]] of the config file)",
        epilog="examples: pgrecall sources add notes ~/notes [--name NAME]\n"
        "          pgrecall sources add claude-code [--path FOLDER] [--name NAME]\n"
        "          pgrecall sources list [--json]\n"
        "          pgrecall sources remove NAME|PATH",
    )
    actions = sources.add_subparsers(dest="action", required=True, metavar="ACTION")
    add = actions.add_parser("add", help="add a folder as a root", description=_add_description())
    add.add_argument("source", choices=sorted(KNOWN_SOURCES), help="the source")
    add.add_argument("folder", nargs="?", metavar="PATH", help="its folder (required for notes)")
    add.add_argument("--path", help="its folder, if not the usual one (as PATH)")
    add.add_argument("--name", help="the root's name, a search filter (default: the source's)")
    add.set_defaults(run=run_add)
    listing = actions.add_parser("list", help="the roots of the config file")
    listing.add_argument("--json", action="store_true", help="print them as JSON")
    listing.set_defaults(run=run_list)
    remove = actions.add_parser("remove", help="remove a root from the config file (its documents and archive stay)")
    remove.add_argument("name", metavar="NAME|PATH", help="the root's name or folder")
    remove.set_defaults(run=run_remove)


def _add_description() -> str:
    lines = [
        "Add a root to the config file; serve and watch follow it from their next start, "
        "index without PATH indexes it. Known sources:"
    ]
    for name, source in KNOWN_SOURCES.items():
        where = source["path"] or "the folder given as PATH"
        kept = ", an archive root (what the source deletes is kept)" if source["archive"] else ""
        lines.append(f"  {name}: {where}{kept}")
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


def add_source(
    config_file: Path, source: str, path: str | None = None, name: str | None = None, memory_folder: Path | None = None
) -> tuple[dict, bool]:
    """Add the known `source` to the config file's [[roots]]: (its entry, whether it was added).
    The same folder added again is left as it is (False); a folder inside or around another root,
    or around or inside `memory_folder`, is refused, as serve would refuse it."""
    known = KNOWN_SOURCES[source]
    raw_path = path or known["path"]
    if raw_path is None:
        raise InvalidInput(f"give the folder: pgrecall sources add {source} PATH")
    folder = Path(raw_path).expanduser()
    if not folder.is_dir():
        raise InvalidInput(f"not a folder: {raw_path}")
    folder = folder.resolve()
    stored = raw_path if raw_path.startswith("~") else str(folder)  # relative paths would be the config file's
    name = name or source
    if known["archive"] and not is_plain_name(name):
        raise InvalidInput(f"an archive root's name must be a plain folder name, not {name!r}")
    if name == roots.MEMORY_ROOT:
        raise InvalidInput(f'the root name "{roots.MEMORY_ROOT}" is the memory folder\'s; give another with --name')
    configured = roots.from_config(config_file)
    for root in configured:
        if root.path == folder:
            if root.archive != known["archive"]:
                raise InvalidInput(f"{folder} is already the root {root.name}, of another kind; remove it first")
            return {"name": root.name, "path": str(root.path), "archive": root.archive}, False
    for root in configured:
        if root.name == name:
            raise InvalidInput(
                f"a root named {name} is already in {config_file} ({root.path}); give this one another with --name"
            )
        if folder.is_relative_to(root.path) or root.path.is_relative_to(folder):
            raise InvalidInput(
                f"{folder} and the root {root.name} ({root.path}) are inside one another: "
                "its files would be indexed twice"
            )
    if memory_folder is not None and (folder.is_relative_to(memory_folder) or memory_folder.is_relative_to(folder)):
        raise InvalidInput(f"{folder} and the memory folder {memory_folder} are inside one another")
    document = read_document(config_file)
    _entries(document)
    entry = tomlkit.table()
    entry["name"] = name
    entry["path"] = stored
    if known["archive"]:
        entry["archive"] = True
    if "roots" in document:
        document["roots"].append(entry)
    else:
        tables = tomlkit.aot()
        tables.append(entry)
        document["roots"] = tables
    write_document(config_file, document)
    return {"name": name, "path": stored, "archive": known["archive"]}, True


def remove_source(config_file: Path, name_or_path: str) -> str:
    """Remove the root named `name_or_path`, or whose folder it is; returns its name."""
    document = read_document(config_file)
    entries = _entries(document)
    folder = Path(name_or_path).expanduser().resolve() if "/" in name_or_path or name_or_path.startswith("~") else None
    for number, entry in enumerate(entries):
        named = _name_of(entry) == name_or_path
        if named or (folder is not None and _folder_of(config_file, entry) == folder):
            name = _name_of(entry)
            del entries[number]
            break
    else:
        raise InvalidInput(f"no root named {name_or_path} in {config_file} (pgrecall sources list shows them)")
    if not entries:
        del document["roots"]
    write_document(config_file, document)
    return name


def _folder_of(config_file: Path, entry) -> Path | None:
    raw = entry.get("path")
    if not isinstance(raw, str):
        return None
    path = Path(raw).expanduser()
    return (path if path.is_absolute() else config_file.parent / path).resolve()


def list_sources(config_file: Path) -> list[dict]:
    return [
        {"name": _name_of(entry), "path": str(entry.get("path")), "archive": bool(entry.get("archive", False))}
        for entry in _entries(read_document(config_file))
    ]


def run_add(args: argparse.Namespace, settings: Settings) -> int:
    if args.folder and args.path and args.folder != args.path:
        raise InvalidInput("give the folder once: as PATH or as --path")
    memories = roots.memory_folder(settings.config_file, settings.home)
    entry, added = add_source(settings.config_file, args.source, args.folder or args.path, args.name, memories)
    if not added:
        print(f"root {entry['name']} ({entry['path']}) is already in {settings.config_file}: nothing changed")
        return 0
    kept = "; an archive root: what the source deletes is kept" if entry["archive"] else ""
    print(f"added root {entry['name']} ({entry['path']}) to {settings.config_file}{kept}")
    print("pgrecall serve follows it from its next start; pgrecall index indexes it now")
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
    name = remove_source(settings.config_file, args.name)
    print(f"removed root {name} from {settings.config_file}; its documents stay in the index")
    return 0
