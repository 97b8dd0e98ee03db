"""Named roots: those of the config file, and folders named on the command line for one run.

# ~/.config/pgrecall/config.toml
[[roots]]
name = "notes"
path = "~/notes"

[[roots]]
name = "claude"
path = "~/Downloads/claude-export"

[[roots]]
name = "claude-code"
path = "~/.claude/projects"
archive = true   # keep what the source deletes, under PGRECALL_HOME/archive/claude-code/

[[roots]]
name = "apollo-notes"
path = "~/work/apollo/docs"
project = "~/work/apollo"   # the project of its notes that name none in their front matter

[memory]
folder = "~/memories"   # default: memories/ in the data directory; never inside a root
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
from pathlib import Path

from pgrecall.errors import ConfigurationError, InvalidInput
from pgrecall.projects import project_of


@dataclasses.dataclass(frozen=True)
class Root:
    name: str
    path: Path
    archive: bool = False  # files deleted at the source are kept (archive_folder)
    project: str | None = None  # its documents' project where they name none (pgrecall.projects)


ARCHIVE_FOLDER = "archive"


def archive_folder(home: Path, root: Root) -> Path | None:
    """Where an archive root's copies live: PGRECALL_HOME/archive/<name>; None for another root."""
    return home / ARCHIVE_FOLDER / root.name if root.archive else None


def from_arguments(paths: list[str]) -> list[Root]:
    roots = []
    for raw in paths:
        path = Path(raw).expanduser()
        if not path.is_dir():
            raise InvalidInput(f"not a folder: {raw}")
        path = path.resolve()
        roots.append(Root(path.name or str(path), path))
    return roots


MEMORY_ROOT = "memories"


def _load(config_file: Path | None) -> dict:
    if config_file is None or not config_file.is_file():
        return {}
    try:
        return tomllib.loads(config_file.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigurationError(f"{config_file}: {exc}") from None


def memory_folder(config_file: Path | None, home: Path) -> Path:
    """Where remembered notes live: `[memory] folder` of the config file, else `memories/` in the data directory."""
    section = _load(config_file).get("memory", {})
    if not isinstance(section, dict):
        raise ConfigurationError(f"{config_file}: [memory] must be a table")
    folder = section.get("folder")
    if folder is None:
        return _unlinked(home / MEMORY_ROOT)
    if not isinstance(folder, str) or not folder.strip():
        raise ConfigurationError(f"{config_file}: [memory] folder must be a path")
    return _unlinked(_config_path(config_file, folder, resolve=False))


def _unlinked(path: Path) -> Path:
    """The path with its parent resolved but not its last part: a memory folder replaced by a
    symbolic link stays the link (which the memory notes refuse), never becomes its target."""
    path = Path(os.path.abspath(path))
    return path.parent.resolve() / path.name


def _config_path(config_file: Path | None, raw: str, resolve: bool = True) -> Path:
    """A path of the config file: relative ones are relative to the file, not to the working
    directory (which is / under systemd)."""
    path = Path(raw).expanduser()
    if not path.is_absolute() and config_file is not None:
        path = config_file.parent / path
    return path.resolve() if resolve else path


def with_memories(roots: list[Root], folder: Path) -> list[Root]:
    """The watched roots plus the memory folder (always watched, named "memories")."""
    others = [root for root in roots if root.path != folder]  # the memory folder named as a root: once
    if any(root.name == MEMORY_ROOT for root in others):
        raise ConfigurationError(f'the root name "{MEMORY_ROOT}" is taken by the memory folder; rename that root')
    for root in others:
        # Nested, every note would be indexed twice, once under each root.
        if folder.is_relative_to(root.path) or root.path.is_relative_to(folder):
            raise ConfigurationError(
                f"the memory folder {folder} and the root {root.name} ({root.path}) are inside one another; "
                "move the memory folder out ([memory] folder in the config file)"
            )
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    return [*others, Root(MEMORY_ROOT, folder)]


def from_config(config_file: Path) -> list[Root]:
    config = _load(config_file)
    roots = []
    for number, entry in enumerate(config.get("roots", []), 1):
        if not isinstance(entry, dict) or not isinstance(entry.get("path"), str):
            raise ConfigurationError(f"{config_file}: roots entry {number} needs a path")
        path = _config_path(config_file, entry["path"])
        if not path.is_dir():
            raise ConfigurationError(f"{config_file}: root {entry['path']} is not a folder")
        archive = entry.get("archive", False)
        if not isinstance(archive, bool):
            raise ConfigurationError(f"{config_file}: roots entry {number}: archive must be true or false")
        name = str(entry.get("name") or path.name)
        if archive and not is_plain_name(name):
            raise ConfigurationError(f"{config_file}: archive root name {name!r} must be a plain folder name")
        roots.append(Root(name, path, archive, _project(config_file, number, entry.get("project"))))
    names = [root.name for root in roots]
    if len(set(names)) != len(names):
        raise ConfigurationError(f"{config_file}: root names must be unique")
    if pair := nested_pair(roots):
        inner, outer = pair
        raise ConfigurationError(
            f"{config_file}: the root {inner.name} ({inner.path}) is inside the root {outer.name} ({outer.path}); "
            "its files would be indexed twice"
        )
    return roots


def _project(config_file: Path, number: int, value: object) -> str | None:
    """A root's project: a path (relative to the config file, like a root's) or a name."""
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip() or "\n" in value:
        raise ConfigurationError(f"{config_file}: roots entry {number}: project must be a folder or a name")
    value = value.strip()
    if value.startswith(("/", "~", "./", "../")):
        value = str(_config_path(config_file, value))
    return project_of(value)


def is_plain_name(name: str) -> bool:
    """A name that is one folder of its own under PGRECALL_HOME/archive: no separator, not hidden, not `..`."""
    return bool(name) and "/" not in name and "\\" not in name and not name.startswith(".") and "\x00" not in name


NO_ROOTS = (
    "no folders to follow: add one with `pgrecall sources add notes PATH` "
    "(it goes into the config file, PGRECALL_CONFIG), or name it on the command line"
)


def resolve(paths: list[str], config_file: Path | None, required: bool = True) -> list[Root]:
    """The roots of the config file, and the folders named on the command line added to them for
    this run; none is an error if `required`."""
    found = add_named(from_config(config_file) if config_file else [], from_arguments(paths))
    if not found and required:
        raise InvalidInput(NO_ROOTS)
    return found


def add_named(configured: list[Root], named: list[Root]) -> list[Root]:
    """`configured` and then each of `named` that is not one of them already (by folder)."""
    found = list(configured)
    for root in named:
        if any(root.path == other.path for other in found):
            continue
        if any(root.name == other.name for other in found):
            raise InvalidInput(
                f"two roots named {root.name}: {root.path} and another; follow it under another name with "
                f"`pgrecall sources add notes {root.path} --name NAME`"
            )
        found.append(root)
    if pair := nested_pair(found):
        inner, outer = pair
        raise InvalidInput(
            f"the root {inner.name} ({inner.path}) is inside the root {outer.name} ({outer.path}): "
            "its files would be indexed twice"
        )
    return found


def nested_pair(found: list[Root]) -> tuple[Root, Root] | None:
    """Two roots of which the first is inside the second, if there are any."""
    for inner in found:
        for outer in found:
            if inner is not outer and inner.path != outer.path and inner.path.is_relative_to(outer.path):
                return inner, outer
    return None


def containing(roots_paths: list[Path], path: Path) -> Path | None:
    """The innermost of `roots_paths` that holds `path`, if one does."""
    holding = [root for root in roots_paths if path.is_relative_to(root) and path != root]
    return max(holding, key=lambda root: len(root.parts), default=None)
