"""Named roots: from the command line, or from the config file.

# ~/.config/pgrecall/config.toml
[[roots]]
name = "notes"
path = "~/notes"

[[roots]]
name = "claude"
path = "~/Downloads/claude-export"
"""

from __future__ import annotations

import dataclasses
import tomllib
from pathlib import Path

from pgrecall.errors import ConfigurationError, InvalidInput


@dataclasses.dataclass(frozen=True)
class Root:
    name: str
    path: Path


def from_arguments(paths: list[str]) -> list[Root]:
    roots = []
    for raw in paths:
        path = Path(raw).expanduser()
        if not path.is_dir():
            raise InvalidInput(f"not a folder: {raw}")
        path = path.resolve()
        roots.append(Root(path.name or str(path), path))
    return roots


def from_config(config_file: Path) -> list[Root]:
    if not config_file.is_file():
        return []
    try:
        config = tomllib.loads(config_file.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigurationError(f"{config_file}: {exc}") from None
    roots = []
    for number, entry in enumerate(config.get("roots", []), 1):
        if not isinstance(entry, dict) or not isinstance(entry.get("path"), str):
            raise ConfigurationError(f"{config_file}: roots entry {number} needs a path")
        path = Path(entry["path"]).expanduser().resolve()
        if not path.is_dir():
            raise ConfigurationError(f"{config_file}: root {entry['path']} is not a folder")
        roots.append(Root(str(entry.get("name") or path.name), path))
    names = [root.name for root in roots]
    if len(set(names)) != len(names):
        raise ConfigurationError(f"{config_file}: root names must be unique")
    return roots


def resolve(paths: list[str], config_file: Path | None) -> list[Root]:
    roots = from_arguments(paths) if paths else from_config(config_file) if config_file else []
    if not roots:
        raise InvalidInput("no folders to watch: name them, or list [[roots]] in the config file")
    return roots
