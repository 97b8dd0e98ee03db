"""What the commands share: their subparsers' shape, the database URL, the searcher, argument parsing.

Imports nothing heavy at the top (no psycopg, no structlog): a search answered over the
warm socket (pgrecall.warm_client) starts in tens of milliseconds.
"""

from __future__ import annotations

import argparse
import sys
import threading
from collections.abc import Callable

from pgrecall.settings import Settings

Run = Callable[[argparse.Namespace, Settings], int]


def command(commands: argparse._SubParsersAction, name: str, run: Run, **options) -> argparse.ArgumentParser:
    """A subcommand that runs `run(args, settings)`; its description and epilog printed as written."""
    if "epilog" in options or "description" in options:
        options.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
    parser = commands.add_parser(name, **options)
    parser.set_defaults(run=run)
    return parser


def url(settings: Settings, migrate: bool = True) -> str:
    if not migrate:
        from pgrecall.postgres import database

        return database.database_url(settings)
    from pgrecall.postgres.migrator import migrated_url

    return migrated_url(settings)


def searcher(settings: Settings, pool_size: int):
    from pgrecall.api.searcher import Searcher, search_url

    # Searches never migrate and need no write rights: the embedded server is started if
    # needed, an index never set up is one line (IndexNotSetUp), and they log in as the
    # reader role, which cannot write (pgrecall.api.reader).
    return Searcher(search_url(settings), settings, pool_size=pool_size)


def load_model_early(settings: Settings) -> threading.Thread:
    """Start loading the process's embedder in a thread, its imports included, so that the load
    (onnxruntime builds its session outside the GIL) overlaps what the command does meanwhile:
    importing its modules, reaching the database, planning. A failure is the first embed's to
    report. The caller joins the thread before it returns: a process must not exit while
    onnxruntime is still building a session in another thread."""

    def load() -> None:
        try:
            from pgrecall.embedders.embedding import embedder_for

            embedder_for(settings).load()
        except Exception:  # noqa: BLE001, S110 - the first embed loads again and reports it
            pass

    thread = threading.Thread(target=load, name="pgrecall-model-load", daemon=True)
    thread.start()
    return thread


def text_argument(text: str | None, required: bool = True) -> str | None:
    """TEXT as given; from stdin when it is - (or absent, and stdin is not a terminal)."""
    from pgrecall.errors import InvalidInput

    if text == "-" or (text is None and required and not sys.stdin.isatty()):
        return sys.stdin.read()
    if text is None and required:
        raise InvalidInput("give the text as an argument, or pipe it on stdin")
    return text


def key_values(items: list[str]) -> dict[str, str]:
    from pgrecall.errors import InvalidInput

    metadata = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise InvalidInput(f"--meta takes KEY=VALUE, got {item!r}")
        metadata[key] = value
    return metadata
