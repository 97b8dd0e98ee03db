"""`pgrecall db` (the embedded database: url, start, stop) and `pgrecall migrate`."""

from __future__ import annotations

import argparse
import sys

from pgrecall.cli.common import command, url
from pgrecall.postgres import database
from pgrecall.settings import Settings


def add_parser(commands: argparse._SubParsersAction) -> None:
    db = command(commands, "db", run_db, help="the embedded database: url, start, stop")
    db.add_argument("action", choices=("url", "start", "stop"))

    command(commands, "migrate", run_migrate, help="apply the schema migrations (every command does this when needed)")


def run_db(args: argparse.Namespace, settings: Settings) -> int:
    if args.action == "url":
        print(database.database_url(settings))
    elif args.action == "start":
        if not settings.embedded:
            print("PGRECALL_DATABASE_URL is set: nothing to start", file=sys.stderr)
            return 0
        print(url(settings))
    elif args.action == "stop":
        if not settings.embedded:
            print("PGRECALL_DATABASE_URL is set: nothing to stop", file=sys.stderr)
            return 0
        print("stopped" if database.stop_embedded(settings) else "not running")
    return 0


def run_migrate(args: argparse.Namespace, settings: Settings) -> int:
    from pgrecall.postgres.migrator import migrate

    with database.connect(url(settings, migrate=False)) as conn:
        applied = migrate(conn)
    print("applied: " + ", ".join(applied) if applied else "up to date")
    return 0
