"""`pgrecall setup claude-code` and `pgrecall setup claude-desktop`: pgrecall's hooks and MCP server in their settings."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from pgrecall.cli.common import command
from pgrecall.settings import Settings

APPLICATIONS = {"claude-code": "Claude Code", "claude-desktop": "Claude Desktop"}

EPILOG = """what it writes:
  claude-code     ~/.claude/settings.json: hooks SessionStart (pgrecall hook session-start) and
                  UserPromptSubmit (pgrecall hook prompt), SessionEnd and PreCompact (pgrecall hook
                  session-end, pre-compact); ~/.claude.json: the MCP server pgrecall (user scope, as
                  `claude mcp add --scope user` stores it)
  claude-code --plugin
                  the same hooks and server as a Claude Code plugin: a local marketplace written to
                  PGRECALL_HOME/claude-code-marketplace and registered with `claude plugin
                  marketplace add` (claude on PATH); pgrecall's entries in the two files above go.
                  Then: claude plugin install pgrecall@pgrecall
  claude-desktop  Claude Desktop's claude_desktop_config.json: the MCP server pgrecall
Commands are written with this pgrecall's absolute path, and with PGRECALL_HOME and
PGRECALL_CONFIG when they are set, so they open this index. Every file changed is backed up
first (<file>.pgrecall-backup-<UTC timestamp>); other settings, hooks and servers are kept.

examples:
  pgrecall setup claude-code --dry-run    show the changes as a diff, write nothing
  pgrecall setup claude-code              set it up (again: nothing changes)
  pgrecall setup claude-code --plugin     as a plugin, then: claude plugin install pgrecall@pgrecall
  pgrecall setup claude-desktop --remove  take pgrecall's entries out again
"""


def add_parser(commands: argparse._SubParsersAction) -> None:
    setup = command(
        commands,
        "setup",
        run_setup,
        help="register pgrecall's hooks and MCP server in Claude Code or Claude Desktop",
        description="Register pgrecall in an assistant's user settings, or --remove it.",
        epilog=EPILOG,
    )
    setup.add_argument(
        "application", choices=tuple(APPLICATIONS), help="the assistant whose user settings get pgrecall"
    )
    setup.add_argument("--dry-run", action="store_true", help="print a unified diff of each file it would change")
    setup.add_argument(
        "--remove",
        action="store_true",
        help="remove pgrecall's hooks and MCP server entry, and for claude-code its plugin and marketplace",
    )
    setup.add_argument(
        "--plugin",
        action="store_true",
        help="claude-code: as a Claude Code plugin from a local marketplace instead of the settings files",
    )
    setup.add_argument(
        "--home-dir", type=Path, help="the home folder whose settings are changed (default: $HOME)", metavar="DIR"
    )


def run_setup(args: argparse.Namespace, settings: Settings) -> int:
    from pgrecall.claude_integration import json_edits
    from pgrecall.errors import InvalidInput

    if args.plugin and args.application != "claude-code":
        raise InvalidInput("--plugin is for claude-code")
    home = (args.home_dir or Path.home()).expanduser().absolute()
    plugin = args.plugin and not args.remove
    # The plugin route takes out the settings-file route's entries: nothing runs twice.
    edits = _edits(args.application, home, settings, remove=args.remove or plugin)
    changes = [json_edits.plan(path, edit, create=not (args.remove or plugin)) for path, edit in edits]
    name = APPLICATIONS[args.application]
    if args.dry_run:
        from pgrecall.claude_integration.claude_setup import unified_diff

        for change in changes:
            if change.changed:
                sys.stdout.write(unified_diff(str(change.path), change.before, change.after))
            else:
                print(f"{change.path}: no change")
        _plugin(args, settings, home, plugin)
        print("dry run: nothing written")
        return 0
    written = {done.path: done for done in json_edits.apply(changes, datetime.now(UTC))}
    for change in changes:
        done = written.get(change.path)
        if done is None:
            print(f"{change.path}: no change")
        elif done.backup is None:
            print(f"created {change.path}")
        else:
            print(f"updated {change.path} (backup: {done.backup.name})")
    plugin_changed = _plugin(args, settings, home, plugin)
    if args.application == "claude-code" and not args.remove and not _sessions_kept(settings, home):
        print("sessions are kept when they end once Claude Code's folder is a source: pgrecall sources add claude-code")
    if not written and not plugin_changed:
        print(
            f"pgrecall is not set up in {name}: nothing to remove"
            if args.remove
            else f"pgrecall is already set up in {name}: nothing changed"
        )
    else:
        print(f"restart {name} to {'unload' if args.remove else 'load'} pgrecall")
    return 0


def _sessions_kept(settings: Settings, home: Path) -> bool:
    """Whether an archive root of the config file holds Claude Code's session folder (a broken
    config file says nothing here: serve and index report it)."""
    from pgrecall import roots
    from pgrecall.errors import PgRecallError

    projects = (home / ".claude" / "projects").resolve()
    try:
        configured = roots.resolve([], settings.config_file, required=False)
    except PgRecallError:
        return True
    return any(root.archive and (projects == root.path or projects.is_relative_to(root.path)) for root in configured)


def _plugin(args: argparse.Namespace, settings: Settings, home: Path, plugin: bool) -> bool:
    """The plugin route's part (pgrecall.cli.setup_plugin): written and registered with --plugin,
    removed with --remove; whether it did anything."""
    if args.application != "claude-code":
        return False
    from pgrecall.cli import setup_plugin

    if not plugin:
        return setup_plugin.uninstall(settings, home, args.dry_run) if args.remove else False
    argv, env = _launch(settings)
    hook_env, timeout = _hook_environment(env)
    return setup_plugin.install(settings, home, setup_plugin.files(argv, hook_env, timeout), args.dry_run)


def _hook_environment(env: dict[str, str]) -> tuple[dict[str, str], int]:
    """The hooks' environment (the server's, with PGRECALL_HOOK_DEADLINE when set) and Claude Code's timeout."""
    from pgrecall.claude_integration import claude_setup as cs

    deadline = os.environ.get(cs.DEADLINE_VARIABLE)
    return env | ({cs.DEADLINE_VARIABLE: deadline} if deadline else {}), cs.hook_timeout(deadline)


def _edits(application: str, home: Path, settings: Settings, remove: bool) -> list[tuple[Path, Callable]]:
    """(file, edit) for each file of `application`: dict in, dict out."""
    from pgrecall.claude_integration import claude_setup as cs

    if application == "claude-desktop":
        config = cs.claude_desktop_file(home, sys.platform)
        if remove:
            return [(config, cs.without_mcp_server)]
        server = cs.mcp_server(*_launch(settings), desktop=True)
        return [(config, lambda data: cs.with_mcp_server(data, server))]
    hooks_file, config = cs.claude_code_files(home)
    if remove:
        return [(hooks_file, cs.without_hooks), (config, cs.without_mcp_server)]
    argv, env = _launch(settings)
    hooks = cs.hook_entries(argv, *_hook_environment(env))
    server = cs.mcp_server(argv, env)
    return [
        (hooks_file, lambda data: cs.with_hooks(data, hooks)),
        (config, lambda data: cs.with_mcp_server(data, server)),
    ]


def _launch(settings: Settings) -> tuple[tuple[str, ...], dict[str, str]]:
    """This pgrecall's command, and the environment it needs to open this index."""
    from pgrecall.claude_integration import claude_setup as cs

    resolved = {"PGRECALL_HOME": str(settings.home), "PGRECALL_CONFIG": str(settings.config_file)}
    return cs.launcher(sys.argv[0], sys.executable), cs.carried_environment(os.environ, resolved)
