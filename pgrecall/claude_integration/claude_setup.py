"""pgrecall's entries in Claude Code's and Claude Desktop's settings: pure functions, dict in, dict out.

Claude Code runs the hooks of `~/.claude/settings.json` (`hooks.<Event>`: a list of matcher
groups, each `{"matcher": ..., "hooks": [{"type": "command", "command": ..., "timeout": ...}]}`;
no matcher matches every prompt or session start) and the MCP servers `claude mcp add --scope user`
stores at the top of `~/.claude.json` (`mcpServers.<name>`: `{"type": "stdio", "command",
"args", "env"}`). Claude Desktop reads `mcpServers` from `claude_desktop_config.json`.

Adding replaces pgrecall's entries wherever they are (another path, another environment) and
appends them when there are none; removing takes out exactly pgrecall's entries. Everything
else, the order of keys included, is kept: the functions copy their input and edit the copy.
"""

from __future__ import annotations

import copy
import difflib
import json
import math
import os
import re
import shlex
from collections.abc import Callable, Mapping
from pathlib import Path

from pgrecall.claude_integration.json_text import edited_text
from pgrecall.errors import ConfigurationError, InvalidInput

SERVER_NAME = "pgrecall"
# Claude Code's hook event -> the `pgrecall hook` subcommand that answers it.
HOOK_EVENTS = {
    "SessionStart": "session-start",
    "UserPromptSubmit": "prompt",
    # The session's transcript kept and indexed when it ends and before a compaction (pgrecall.kept_sessions).
    "SessionEnd": "session-end",
    "PreCompact": "pre-compact",
}
# Carried into the hooks' and the server's environment when set, so they open the same index.
CARRIED_VARIABLES = ("PGRECALL_HOME", "PGRECALL_CONFIG")
DEADLINE_VARIABLE = "PGRECALL_HOOK_DEADLINE"
# Claude Code's timeout (seconds) stays above the hooks' own deadline (default 1.5 s): the hook
# gives up first and exits 0, Claude Code never has to kill it.
MIN_HOOK_TIMEOUT = 5
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def launcher(argv0: str, executable: str, is_file: Callable[[str], bool] = os.path.isfile) -> tuple[str, ...]:
    """The command that starts this pgrecall, by absolute path: the `pgrecall` script that runs
    (or the one installed beside this Python), else this Python with `-m pgrecall.cli`."""
    for script in (argv0, os.path.join(os.path.dirname(executable), "pgrecall")):
        if os.path.basename(script) == "pgrecall" and is_file(script):
            return (os.path.abspath(script),)
    return (os.path.abspath(executable), "-m", "pgrecall.cli")


def carried_environment(environ: Mapping[str, str], resolved: Mapping[str, str]) -> dict[str, str]:
    """The variables of CARRIED_VARIABLES the user set, with their resolved (absolute) values."""
    return {name: resolved.get(name, environ[name]) for name in CARRIED_VARIABLES if environ.get(name)}


def hook_timeout(deadline: str | None) -> int:
    """Claude Code's timeout for a hook whose own deadline is `deadline` seconds (None: the default)."""
    if not deadline:
        return MIN_HOOK_TIMEOUT
    try:
        seconds = float(deadline)
    except ValueError:
        seconds = math.nan
    if not math.isfinite(seconds) or seconds <= 0:
        raise ConfigurationError(f"{DEADLINE_VARIABLE} must be a positive number of seconds, got {deadline!r}")
    return max(MIN_HOOK_TIMEOUT, math.ceil(seconds) + 2)


def hook_command(argv: tuple[str, ...], subcommand: str, env: Mapping[str, str]) -> str:
    """The shell command line Claude Code runs: `VAR=value ... /abs/pgrecall hook <subcommand>`."""
    assignments = [f"{name}={shlex.quote(value)}" for name, value in env.items()]
    return " ".join([*assignments, shlex.join([*argv, "hook", subcommand])])


def hook_entries(argv: tuple[str, ...], env: Mapping[str, str], timeout: int) -> dict[str, dict]:
    """Claude Code event -> pgrecall's hook entry for it."""
    return {
        event: {"type": "command", "command": hook_command(argv, subcommand, env), "timeout": timeout}
        for event, subcommand in HOOK_EVENTS.items()
    }


def mcp_server(argv: tuple[str, ...], env: Mapping[str, str], desktop: bool = False) -> dict:
    """pgrecall's MCP server entry: as `claude mcp add --scope user` stores it, or as Claude Desktop reads it."""
    entry = {"command": argv[0], "args": [*argv[1:], "mcp"]}
    if desktop:
        return entry | ({"env": dict(env)} if env else {})
    return {"type": "stdio"} | entry | {"env": dict(env)}


def pgrecall_hook(command: object) -> str | None:
    """The `pgrecall hook` subcommand a hook's command line runs (any path, any environment), else None."""
    if not isinstance(command, str):
        return None
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    while words and _ASSIGNMENT.match(words[0]):
        words = words[1:]
    if words and os.path.basename(words[0]) == "pgrecall":
        words = words[1:]
    elif len(words) > 2 and words[1] == "-m" and words[2] in ("pgrecall", "pgrecall.cli"):
        words = words[3:]
    else:
        return None
    words = [word for word in words if not word.startswith("-")]  # -v and the like
    if len(words) >= 2 and words[0] == "hook" and words[1] in HOOK_EVENTS.values():
        return words[1]
    return None


def _is_pgrecall_entry(entry: object, subcommand: str | None = None) -> bool:
    if not isinstance(entry, dict) or entry.get("type") != "command":
        return False
    found = pgrecall_hook(entry.get("command"))
    return found is not None and (subcommand is None or found == subcommand)


def _table(data: dict, key: str) -> dict | None:
    value = data.get(key)
    if value is not None and not isinstance(value, dict):
        raise InvalidInput(f"{key} must be a JSON object, not {type(value).__name__}")
    return value


def _groups(hooks: dict, event: str) -> list:
    groups = hooks.get(event)
    if groups is None:
        return []
    if not isinstance(groups, list) or not all(isinstance(g, dict) for g in groups):
        raise InvalidInput(f"hooks.{event} must be a list of matcher groups")
    for group in groups:
        if not isinstance(group.get("hooks", []), list):
            raise InvalidInput(f"hooks.{event}: a matcher group's hooks must be a list")
    return groups


def _without_entries(groups: list, keep: Callable[[object], bool]) -> list:
    """The groups with only the entries `keep` accepts; a group left empty is dropped."""
    result = []
    for group in groups:
        entries = group.get("hooks", [])
        kept = [entry for entry in entries if keep(entry)]
        if len(kept) == len(entries):
            result.append(group)
        elif kept:
            result.append(group | {"hooks": kept})
    return result


def _top(data: object) -> dict:
    if not isinstance(data, dict):
        raise InvalidInput(f"the file must hold a JSON object, not {type(data).__name__}")
    return copy.deepcopy(data)


def with_hooks(settings: object, wanted: Mapping[str, dict]) -> dict:
    """Claude Code settings with pgrecall's hook entry in each event of `wanted`, exactly once."""
    settings = _top(settings)
    hooks = _table(settings, "hooks")
    hooks = settings.setdefault("hooks", {}) if hooks is None else hooks
    for event, entry in wanted.items():
        hooks[event] = _with_entry(_groups(hooks, event), copy.deepcopy(entry))
    return settings


def _with_entry(groups: list, entry: dict) -> list:
    """The first of pgrecall's entries for this hook becomes `entry`, in its place, and any other
    goes; with none, `entry` is appended in a matcher group of its own."""
    subcommand = pgrecall_hook(entry["command"])
    ours = [found for group in groups for found in group.get("hooks", []) if _is_pgrecall_entry(found, subcommand)]
    if not ours:
        return [*groups, {"hooks": [entry]}]
    first = ours[0]
    groups = _without_entries(groups, lambda found: found is first or not _is_pgrecall_entry(found, subcommand))
    for group in groups:
        if any(found is first for found in group.get("hooks", [])):
            group["hooks"] = [entry if found is first else found for found in group["hooks"]]
    return groups


def without_hooks(settings: object) -> dict:
    """Claude Code settings without any of pgrecall's hook entries; events (and `hooks`) left empty go."""
    settings = _top(settings)
    hooks = _table(settings, "hooks")
    if not hooks:
        return settings
    for event in list(hooks):
        if not isinstance(hooks[event], list):
            continue  # another tool's business: pgrecall never writes anything but lists
        groups = _without_entries(_groups(hooks, event), lambda entry: not _is_pgrecall_entry(entry))
        if groups:
            hooks[event] = groups
        elif hooks[event]:  # emptied here; a list that was empty already is left as it was
            del hooks[event]
    if not hooks:
        del settings["hooks"]
    return settings


def with_mcp_server(config: object, entry: dict) -> dict:
    """A config whose `mcpServers.pgrecall` is `entry`, in its place if there was one, else last."""
    config = _top(config)
    servers = _table(config, "mcpServers")
    if servers is None:
        config["mcpServers"] = servers = {}
    servers[SERVER_NAME] = copy.deepcopy(entry)
    return config


def without_mcp_server(config: object) -> dict:
    """A config without `mcpServers.pgrecall`; `mcpServers` left empty goes."""
    config = _top(config)
    servers = _table(config, "mcpServers")
    if servers and SERVER_NAME in servers:
        del servers[SERVER_NAME]
        if not servers:
            del config["mcpServers"]
    return config


def render(data: dict, original: str | None = None) -> str:
    """`data` as JSON written into `original`: what it does not change stays byte for byte (the
    user's one-line arrays, spacing, final newline); what it adds or changes is written with the
    original's indent and escaping.

    Claude Code writes its files as JSON.stringify(data, null, 2) does, which json.dumps(indent=2,
    ensure_ascii=False) matches byte for byte; an ASCII-only original keeps escaping the rest."""
    if original is None:
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    indent = "  "
    for line in original.splitlines()[1:]:
        stripped = line.lstrip(" \t")
        if stripped and stripped != line:
            indent = line[: len(line) - len(stripped)]
            break
    return edited_text(original, data, indent=indent, ensure_ascii=original.isascii())


def unified_diff(path: str, before: str | None, after: str) -> str:
    """A unified diff of one file, `before` None for a file that does not exist yet."""
    lines = difflib.unified_diff(
        [] if before is None else before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile="/dev/null" if before is None else path,
        tofile=path,
    )
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)


def claude_code_files(home: Path) -> tuple[Path, Path]:
    """Claude Code's user settings (hooks) and its user config (MCP servers of the user scope)."""
    return home / ".claude" / "settings.json", home / ".claude.json"


def claude_desktop_file(home: Path, platform: str) -> Path:
    """Claude Desktop's config file on `platform` (sys.platform)."""
    if platform == "darwin":
        return home / "Library" / "Application Support" / "Claude" / "claude_desktop_config.json"
    if platform == "win32":
        return home / "AppData" / "Roaming" / "Claude" / "claude_desktop_config.json"
    return home / ".config" / "Claude" / "claude_desktop_config.json"
