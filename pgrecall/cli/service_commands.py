"""`pgrecall serve`, `watch` and `worker`: the long-running index service, whole or in parts.

serve also answers searches on a private socket while it runs (pgrecall.cli.warm), unless
PGRECALL_WARM_SOCKET is off.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib

from pgrecall.cli.common import command, url
from pgrecall.settings import Settings


def add_parser(commands: argparse._SubParsersAction) -> None:
    serve = command(
        commands,
        "serve",
        run_serve,
        help="watch folders and index every change, as a service (database, migrations, watcher, workers)",
        epilog="example: pgrecall serve   (the [[roots]] of the config file: pgrecall sources add; "
        "a PATH is followed too, for this run)",
    )
    serve.add_argument("paths", nargs="*", metavar="PATH")
    watch = command(
        commands,
        "watch",
        run_watch,
        help="only watch folders and enqueue changes (workers run elsewhere)",
        epilog="example: pgrecall watch   (the [[roots]] of the config file, and any PATH, for this run)",
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

    roots = []
    if watch:  # the memory folder is always watched, as the root "memories"
        roots = roots_module.with_memories(
            roots_module.resolve(getattr(args, "paths", []), settings.config_file, required=False),
            roots_module.memory_folder(settings.config_file, settings.home),
        )
    asyncio.run(_serve(settings, url(settings), roots, watch=watch, work=work, warm=watch and work))
    return 0


async def _serve(settings: Settings, url: str, roots: list, *, watch: bool, work: bool, warm: bool) -> None:
    """The service, and beside it the warm search service (while the service runs, no longer)."""
    from pgrecall.worker.service import run_service

    warm_task = None
    if warm:
        from pgrecall.cli.warm import serve_warm

        warm_task = asyncio.create_task(serve_warm(settings), name="warm-search")
    try:
        await run_service(settings, url, roots, watch=watch, work=work)
    finally:
        if warm_task is not None:
            warm_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await warm_task


def run_serve(args: argparse.Namespace, settings: Settings) -> int:
    return _run_service(args, settings, watch=True, work=True)


def run_watch(args: argparse.Namespace, settings: Settings) -> int:
    return _run_service(args, settings, watch=True, work=False)


def run_worker(args: argparse.Namespace, settings: Settings) -> int:
    return _run_service(args, settings, watch=False, work=True)
