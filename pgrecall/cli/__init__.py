"""The pgrecall command line: one module per command or group of commands, each importing only the side it needs.

Each module adds its subcommands (`add_parser(commands)`) with the function that
runs them (`run(args, settings)`, set as the parser's default `run`).
"""

from __future__ import annotations

import argparse
import logging
import sys

import psycopg

from pgrecall.cli import db, evaluate, index, memories, recent, search, servers, service, sources, status
from pgrecall.errors import PgRecallError, first_line
from pgrecall.logs import configure_logging
from pgrecall.settings import ENVIRONMENT_VARIABLES, load_settings

EXAMPLES = """examples:
  pgrecall index ~/notes                       index a folder (and drop what was deleted from it)
  pgrecall search "why did the deploy fail"    hybrid search
  pgrecall search E-4711 --mode keyword -k 3   exact terms only
  pgrecall search "retry policy" --path-prefix projects/ --json
  pgrecall remember "Deploys go out on Tuesdays: Friday deploys broke on-call twice." --tag ops
  pgrecall memories --tag ops                  the memories tagged ops, newest first
  pgrecall status --json
"""

# In the order `pgrecall --help` lists them.
COMMAND_MODULES = (index, search, recent, memories, service, sources, servers, status, db, evaluate)
SERVICE_COMMANDS = ("serve", "watch", "worker")  # they log their progress at INFO


def _environment_help() -> str:
    lines = ["environment:"]
    lines += [f"  {name:<24} {text}" for name, text in ENVIRONMENT_VARIABLES.items()]
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pgrecall",
        description="Local-first memory: notes indexed in PostgreSQL, answered with hybrid search.",
        epilog=EXAMPLES + "\n" + _environment_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("-v", "--verbose", action="count", default=0, help="log more (-v info, -vv debug)")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in COMMAND_MODULES:
        module.add_parser(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        settings = load_settings()
        quiet = logging.INFO if args.command in SERVICE_COMMANDS else logging.WARNING
        level = {0: quiet, 1: logging.INFO}.get(args.verbose, logging.DEBUG)
        configure_logging(level, settings.log_format)
        return args.run(args, settings)
    except PgRecallError as exc:
        print(f"pgrecall: error: {exc}", file=sys.stderr)
        return 1
    except psycopg.Error as exc:
        print(f"pgrecall: database error: {first_line(exc)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("pgrecall: interrupted", file=sys.stderr)
        return 130
