"""`pgrecall serve`, `watch` and `worker`: the long-running index service, whole or in parts."""

from __future__ import annotations

import argparse
import asyncio

from pgrecall.cli.common import command, url
from pgrecall.settings import Settings


def add_parser(commands: argparse._SubParsersAction) -> None:
    serve = command(
        commands,
        "serve",
        run_serve,
        help="watch folders and index every change, as a service (database, migrations, watcher, workers)",
        epilog="example: pgrecall serve ~/notes   (without PATH: the [[roots]] of the config file)",
    )
    serve.add_argument("paths", nargs="*", metavar="PATH")
    watch = command(
        commands,
        "watch",
        run_watch,
        help="only watch folders and enqueue changes (workers run elsewhere)",
        epilog="example: pgrecall watch ~/notes",
    )
    watch.add_argument("paths", nargs="*", metavar="PATH")
    command(
        commands,
        "worker",
        run_worker,
        help="only work the queue (several may share one database)",
        epilog="example: PGRECALL_DATABASE_URL=postgresql://db.lan/pgrecall pgrecall worker",
    )


def _run_service(args: argparse.Namespace, settings: Settings, watch: bool, work: bool) -> int:
    from pgrecall import roots as roots_module
    from pgrecall.worker.service import run_service

    roots = []
    if watch:  # the memory folder is always watched, as the root "memories"
        roots = roots_module.with_memories(
            roots_module.resolve(getattr(args, "paths", []), settings.config_file, required=False),
            roots_module.memory_folder(settings.config_file, settings.home),
        )
    asyncio.run(run_service(settings, url(settings), roots, watch=watch, work=work))
    return 0


def run_serve(args: argparse.Namespace, settings: Settings) -> int:
    return _run_service(args, settings, watch=True, work=True)


def run_watch(args: argparse.Namespace, settings: Settings) -> int:
    return _run_service(args, settings, watch=True, work=False)


def run_worker(args: argparse.Namespace, settings: Settings) -> int:
    return _run_service(args, settings, watch=False, work=True)
