"""pgrecall as a Claude Code plugin, in a local marketplace: the files, as text, from pure functions.

A marketplace is a folder with `.claude-plugin/marketplace.json`, listing plugins by a path inside
it; `claude plugin marketplace add FOLDER` registers it and `claude plugin install
pgrecall@pgrecall` installs the plugin from it. The plugin is a folder with
`.claude-plugin/plugin.json`, `hooks/hooks.json` (the events of pgrecall.claude_integration.claude_setup.HOOK_EVENTS),
`.mcp.json` (the MCP server), skills (`skills/<name>/SKILL.md`, run as `/pgrecall:<name>`) and the
session's injection switch as commands (`commands/off.md`, `commands/on.md`: `/pgrecall:off`, `/pgrecall:on`).

The commands are those of the settings-file route (pgrecall.claude_integration.claude_setup): `pgrecall setup
claude-code --plugin` writes the marketplace with this pgrecall's absolute path and the variables
it carries, so the plugin runs the pgrecall that set it up whatever PATH Claude Code has. The copy
kept in the repository (deploy/claude-code) is the same files for `pgrecall` on PATH, written by
`python -m pgrecall.claude_integration.claude_plugin deploy/claude-code`.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path

from pgrecall.claude_integration import claude_setup as cs

MARKETPLACE = "pgrecall"  # the marketplace's name: the plugin is pgrecall@pgrecall
PLUGIN = "pgrecall"
PLUGIN_FOLDER = f"plugins/{PLUGIN}"
PLUGIN_ID = f"{PLUGIN}@{MARKETPLACE}"
DESCRIPTION = (
    "Local-first memory: your notes, memories and past Claude Code sessions, indexed in PostgreSQL and "
    "searched by meaning and by words. Brings relevant memories into a session, keeps each session when it ends."
)
OWNER = {"name": "pgrecall"}

RECALL_SKILL = """---
name: recall
description: Search the user's long-term memory (notes, saved memories, past Claude Code sessions) with pgrecall. Use before answering about the user's projects, past decisions, preferences or earlier sessions, or when the user asks what was decided or said before.
---

Search pgrecall before answering from general knowledge:

1. Call the pgrecall MCP tool `search_memory` with the question in the user's words (add
   `project` for the current project when it matters). Hits carry a `document_id`, a path and
   the passage that matched.
2. Open a promising hit in full with `get_document` (its `document_id` or path) before relying on it.
3. `recent_memories` lists the newest memories and sessions when the question is "what were we doing".

Answer from what you found and say where it came from (the title or path). If nothing relevant
comes back, say so instead of guessing. $ARGUMENTS
"""

REMEMBER_SKILL = """---
name: remember
description: Save a decision, preference or fact about the user's projects to pgrecall's long-term memory, so that later sessions find it. Use when the user decides something, states a preference, or asks you to remember something.
---

Save it with pgrecall, one fact or decision per memory:

1. Call the pgrecall MCP tool `search_memory` first: if a memory already says this, correct it
   with `update_memory` (its id) instead of saving a near-duplicate.
2. Otherwise call `remember` with a short title and a self-contained text that gives the why, and
   the project when it belongs to one. Never save secrets (keys, tokens, passwords).
3. Remove a memory that turned out wrong with `forget`.

Tell the user what was saved, with its id. $ARGUMENTS
"""

PLUGIN_README = """# pgrecall for Claude Code

This plugin connects Claude Code to pgrecall, a local-first memory: your notes, the memories
assistants saved and your past Claude Code sessions, indexed in PostgreSQL on your machine.

- Hooks: at session start a short briefing of recent memories and sessions of the project; before
  each prompt the passages relevant to it (nothing for chit-chat); when a session ends and before a
  compaction, the session's transcript is copied to pgrecall's archive and indexed.
- The MCP server `pgrecall`: search_memory, get_document, recent_memories, remember, update_memory,
  forget and the memory history tools.
- Skills: `/pgrecall:recall` searches the memory, `/pgrecall:remember` saves a decision.

The plugin runs the `pgrecall` command: install pgrecall first. `pgrecall setup claude-code
--plugin` writes this marketplace with the absolute path of your pgrecall and registers it; then
run `claude plugin install pgrecall@pgrecall`.
"""


def _json(data: object) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def version() -> str:
    try:
        return metadata.version("pgrecall")
    except metadata.PackageNotFoundError:
        return "0.0.0"


def plugin_manifest(plugin_version: str) -> dict:
    return {
        "name": PLUGIN,
        "version": plugin_version,
        "description": DESCRIPTION,
        "author": OWNER,
        "license": "MIT",
        "keywords": ["memory", "search", "notes", "sessions", "postgresql", "mcp"],
    }


def marketplace_manifest(plugin_version: str) -> dict:
    return {
        "name": MARKETPLACE,
        "owner": OWNER,
        "description": "pgrecall's Claude Code plugin, from the pgrecall installed on this machine",
        "plugins": [
            {
                "name": PLUGIN,
                "source": f"./{PLUGIN_FOLDER}",
                "description": DESCRIPTION,
                "version": plugin_version,
                "author": OWNER,
                "license": "MIT",
                "category": "productivity",
            }
        ],
    }


def hooks_file(argv: tuple[str, ...], env: Mapping[str, str], timeout: int) -> dict:
    """hooks/hooks.json: one matcher group per event, each running `pgrecall hook <subcommand>`."""
    entries = cs.hook_entries(argv, env, timeout)
    return {
        "description": "pgrecall: memories into the session, the session into pgrecall",
        "hooks": {event: [{"hooks": [entry]}] for event, entry in entries.items()},
    }


def mcp_file(argv: tuple[str, ...], env: Mapping[str, str]) -> dict:
    """.mcp.json: the MCP server as Claude Code reads it from a plugin (no transport type: stdio)."""
    return {"mcpServers": {cs.SERVER_NAME: cs.mcp_server(argv, env, desktop=True)}}


def session_commands() -> dict[str, str]:
    """The session switch as the plugin's commands, `/pgrecall:off` and `/pgrecall:on`: the command
    files of pgrecall/claude_integration/claude_commands (whose first line the prompt hook recognises), naming each other
    as the plugin namespaces them."""
    folder = Path(__file__).with_name("claude_commands")
    return {
        switch: (folder / f"pgrecall-{switch}.md")
        .read_text(encoding="utf-8")
        .replace("/pgrecall-on", "/pgrecall:on")
        .replace("/pgrecall-off", "/pgrecall:off")
        for switch in ("off", "on")
    }


def marketplace_files(
    argv: tuple[str, ...], env: Mapping[str, str], timeout: int, plugin_version: str
) -> dict[str, str]:
    """The marketplace's files, by path relative to its folder: what `claude plugin marketplace add` reads."""
    plugin = PLUGIN_FOLDER
    return {
        ".claude-plugin/marketplace.json": _json(marketplace_manifest(plugin_version)),
        f"{plugin}/.claude-plugin/plugin.json": _json(plugin_manifest(plugin_version)),
        f"{plugin}/hooks/hooks.json": _json(hooks_file(argv, env, timeout)),
        f"{plugin}/.mcp.json": _json(mcp_file(argv, env)),
        f"{plugin}/skills/recall/SKILL.md": RECALL_SKILL,
        f"{plugin}/skills/remember/SKILL.md": REMEMBER_SKILL,
        **{f"{plugin}/commands/{name}.md": text for name, text in session_commands().items()},
        f"{plugin}/README.md": PLUGIN_README,
    }


def repository_files() -> dict[str, str]:
    """The copy kept in the repository (deploy/claude-code): `pgrecall` on PATH, no variables."""
    return marketplace_files(("pgrecall",), {}, cs.MIN_HOOK_TIMEOUT, version())


def changed_files(folder: Path, files: Mapping[str, str]) -> list[str]:
    """The paths of `files` whose text differs from what `folder` holds (missing ones included)."""
    changed = []
    for relative, text in files.items():
        target = folder / relative
        try:
            same = target.read_text(encoding="utf-8") == text
        except (OSError, UnicodeDecodeError):
            same = False
        if not same:
            changed.append(relative)
    return changed


if __name__ == "__main__":  # python -m pgrecall.claude_integration.claude_plugin deploy/claude-code
    folder, files = Path(sys.argv[1]), repository_files()
    for relative in changed_files(folder, files):
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        (folder / relative).write_text(files[relative], encoding="utf-8")
        print(relative)
