"""The pgrecall command line: one module per command or group of commands, each importing only the side it needs.

Each module adds its subcommands (`add_parser(commands)`) with the function that
runs them (`run(args, settings)`, set as the parser's default `run`). `pgrecall COMMAND`
imports only COMMAND's module, and logging is configured before the command runs unless
the command asks to do it itself (`lazy_logging`: a search answered over the warm socket
never imports structlog), so that a search starts in tens of milliseconds.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import logging
import os
import sys
from types import ModuleType

from pgrecall.errors import PgRecallError, first_line
from pgrecall.settings import ENVIRONMENT_VARIABLES, load_settings

EXAMPLES = """examples:
  pgrecall index ~/notes                       index a folder (and drop what was deleted from it)
  pgrecall search "why did the deploy fail"    hybrid search
  pgrecall search E-4711 --mode keyword -k 3   exact terms only
  pgrecall search "retry policy" --path-prefix projects/ --json
  pgrecall remember "Deploys go out on Tuesdays: Friday deploys broke on-call twice." --tag ops
  pgrecall memories --tag ops                  the memories tagged ops, newest first
  pgrecall status --json
  pgrecall models                              the embedding spaces in the index, the model each needs
"""

# The command modules (pgrecall.cli.<name>), in the order `pgrecall --help` lists them, with the
# commands each adds (tests/unit/test_warm_client.py checks them against the modules). `pgrecall COMMAND`
# imports only its module: a search asking the warm socket does not pay for the others.
COMMAND_MODULES: dict[str, tuple[str, ...]] = {
    "index_commands": ("index", "reembed"),
    "search_commands": ("search",),
    "recent_commands": ("recent",),
    "memory_commands": ("remember", "update", "forget", "restore", "memories"),
    "service_commands": ("serve", "watch", "worker"),
    "sources_commands": ("sources",),
    "server_commands": ("api", "ui", "mcp"),
    "status_commands": ("status", "failures"),
    "model_commands": ("models",),
    "db_commands": ("db", "migrate"),
    "setup_commands": ("setup",),
    "eval_commands": ("eval",),
    "hook_commands": ("hook",),
    "report_commands": ("report",),
}
SERVICE_COMMANDS = ("serve", "watch", "worker")  # they log their progress at INFO


def _environment_help() -> str:
    lines = ["environment:"]
    lines += [f"  {name:<24} {text}" for name, text in ENVIRONMENT_VARIABLES.items()]
    return "\n".join(lines)


def command_modules(command: str | None = None) -> list[ModuleType]:
    """The module of `command`; every command module when it is None or no known command."""
    names = [name for name, commands in COMMAND_MODULES.items() if command in commands] or list(COMMAND_MODULES)
    return [importlib.import_module(f"pgrecall.cli.{name}") for name in names]


def command_of(argv: list[str]) -> str | None:
    """The command argv names: its first word that is no option (the top level's options take no value)."""
    return next((arg for arg in argv if not arg.startswith("-")), None)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or of `command` alone (all of them when it is no known command)."""
    parser = argparse.ArgumentParser(
        prog="pgrecall",
        description="Local-first memory: notes indexed in PostgreSQL, answered with hybrid search.",
        epilog=EXAMPLES + "\n" + _environment_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("-v", "--verbose", action="count", default=0, help="log more (-v info, -vv debug)")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in command_modules(command):
        module.add_parser(commands)
    return parser


def _start_logging(level: int, log_format: str | None) -> None:
    from pgrecall.logs import configure_logging

    configure_logging(level, log_format)


# What a shell reports for a program ended by SIGPIPE (128 + 13), as `cat` is in `cat big | head -1`.
BROKEN_PIPE_EXIT = 141


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so that the flush at exit finds no closed pipe to complain about
    (the handling of BrokenPipeError the signal module's documentation recommends)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser(command_of(argv)).parse_args(argv)
    try:
        settings = load_settings()
        quiet = logging.INFO if args.command in SERVICE_COMMANDS else logging.WARNING
        level = {0: quiet, 1: logging.INFO}.get(args.verbose, logging.DEBUG)
        args.start_logging = functools.partial(_start_logging, level, settings.log_format)
        if not getattr(args, "lazy_logging", False):
            args.start_logging()
        exit_code = args.run(args, settings)
        sys.stdout.flush()  # here, where a closed pipe is caught, not at the interpreter's exit
        return exit_code
    except BrokenPipeError:  # `pgrecall search x | head -1`: the reader has what it wanted
        _silence_stdout()
        return 0 if args.command == "hook" else BROKEN_PIPE_EXIT
    except PgRecallError as exc:  # a bad setting, before a hook could run: a hook still never fails the prompt
        print(f"pgrecall: error: {exc}", file=sys.stderr)
        return 0 if args.command == "hook" else 1
    except Exception as exc:
        psycopg = sys.modules.get("psycopg")  # imported by whatever could raise its errors
        if psycopg is None or not isinstance(exc, psycopg.Error):
            raise
        print(f"pgrecall: database error: {first_line(exc)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("pgrecall: interrupted", file=sys.stderr)
        return 130
