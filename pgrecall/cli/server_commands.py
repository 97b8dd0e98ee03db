"""`pgrecall api` and `pgrecall mcp`: the composition root of the servers.

The servers (pgrecall.api.http, pgrecall.api.mcp_server) never import the write
path; they are handed a memory client built here. Under --read-only none is
built, and no module that writes (pgrecall.worker, pgrecall.composition.memories, the
queue) is imported.
"""

from __future__ import annotations

import argparse
import socket
import sys
import threading
import time
import webbrowser
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pgrecall.cli.common import command, searcher
from pgrecall.settings import Settings

if TYPE_CHECKING:
    from pgrecall.api.searcher import Searcher
    from pgrecall.api.startup import Startup
    from pgrecall.memory.client import MemoryWriter


def add_parser(commands: argparse._SubParsersAction) -> None:
    api = command(
        commands,
        "api",
        run_api,
        help="serve search and memories over HTTP JSON",
        epilog="example: pgrecall api --port 8765; then curl 'http://127.0.0.1:8765/search?q=vacuum&k=3'\n"
        "         curl -X POST http://127.0.0.1:8765/memories -H 'content-type: application/json' "
        '-d \'{"text": "Deploys go out on Tuesdays"}\'',
    )
    api.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1; others need PGRECALL_API_TOKEN)"
    )
    api.add_argument("--port", type=int, default=8765, help="TCP port, 1-65535 (default: 8765)")
    api.add_argument(
        "--read-only", action="store_true", help="refuse memory writes (POST, PATCH, DELETE /memories) with 403"
    )
    ui = command(
        commands,
        "ui",
        run_ui,
        help="the web page: start the API on 127.0.0.1 and open it in the browser",
        epilog="example: pgrecall ui; or pgrecall ui --no-browser --port 8766, then open http://127.0.0.1:8766/",
    )
    ui.add_argument("--port", type=int, default=8765, help="TCP port, 1-65535 (default: 8765)")
    ui.add_argument("--read-only", action="store_true", help="refuse every write, as pgrecall api --read-only")
    ui.add_argument("--no-browser", action="store_true", help="print the address instead of opening a browser")
    mcp = command(
        commands,
        "mcp",
        run_mcp,
        help="serve search and memories to AI assistants: a Model Context Protocol server over stdio",
        epilog="example (Claude Code): claude mcp add pgrecall -- ~/pgrecall/.venv/bin/pgrecall mcp",
    )
    mcp.add_argument("--read-only", action="store_true", help="no remember, update_memory or forget tools")


def memory_startup(settings: Settings) -> Startup[MemoryWriter]:
    """The memory client (the write path: the database migrated), built by a Startup, in the background."""
    from pgrecall.api.startup import Startup

    def open_client() -> MemoryWriter:
        from pgrecall.composition.memories import open_client

        return open_client(settings)

    return Startup(open_client, warm=None, name="memories", what="database and memory folder")


def api_parts(settings: Settings, read_only: bool) -> tuple[Searcher, Startup[MemoryWriter] | None]:
    """The searcher, and the memory client opened by the first write (it migrates the database;
    reads never do), never when read-only."""
    return searcher(settings, pool_size=8), None if read_only else memory_startup(settings)


def status_reader(settings: Settings, index: Searcher, read_only: bool) -> Callable[[], dict[str, Any]]:
    """What the web page's status shows: `pgrecall status`'s report, on a read-only connection of
    its own (the reader role may not read the queue or the roots). Files of a root are counted by
    the worker's scan, which --read-only never imports: there, only what is indexed is shown."""
    from pgrecall import status as status_module
    from pgrecall.memory.notes import MemoryNotes, folder_of
    from pgrecall.postgres import database

    count_files = None
    if not read_only:
        from pgrecall.worker.scan import iter_files

        def count_files(folder):
            return sum(1 for _ in iter_files(folder))

    def report() -> dict[str, Any]:
        with database.connect(database.database_url(settings), read_only=True) as conn:
            found = status_module.report(
                conn,
                settings,
                count_files=count_files,
                memory_folder=folder_of(settings),
                count_memories=lambda folder: sum(1 for _ in MemoryNotes(folder).memories()),
                embedding_space=index.embedder.space,
            )
            found["failures"] = status_module.failures(conn, limit=100)
        return found

    return report


def run_api(args: argparse.Namespace, settings: Settings, listening: socket.socket | None = None) -> int:
    """`listening`: the socket bound to args.host and args.port, if the caller bound it already."""
    from pgrecall.api import editor, http
    from pgrecall.claude_integration import injection_ledger
    from pgrecall.memory.notes import folder_of

    http.check_binding(args.host, settings.api_token, args.port)
    editor_command = editor.parse_command(settings.editor_command) if settings.editor_command else None
    with listening or http.listen(args.host, args.port) as bound:
        index, memories = api_parts(settings, args.read_only)
        try:
            http.serve(
                index,
                args.host,
                bound,
                settings.api_token,
                memories=memories,
                read_only=args.read_only,
                memory_folder=folder_of(settings),
                status=status_reader(settings, index, args.read_only),
                editor_command=editor_command,
                injections=injection_ledger.folder_of(settings.home),
            )
        finally:
            index.close()
            if memories is not None:
                memories.close()
    return 0


def open_browser_when_listening(address: str, port: int, timeout_s: float = 60.0) -> threading.Thread:
    """Open `address` in the browser once the port accepts connections; without a browser (a server,
    a container) print the address instead: never an error."""

    def wait_then_open() -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        else:
            return
        opened = False
        try:
            opened = webbrowser.open(address)
        except webbrowser.Error:
            opened = False
        if not opened:
            print(f"pgrecall ui: open {address} in a browser", file=sys.stderr, flush=True)

    thread = threading.Thread(target=wait_then_open, name="pgrecall-ui-browser", daemon=True)
    thread.start()
    return thread


def run_ui(args: argparse.Namespace, settings: Settings) -> int:
    """`pgrecall api` on loopback, and the browser opened on its page, once the port is ours."""
    from pgrecall.api import http

    args.host = "127.0.0.1"
    http.check_binding(args.host, settings.api_token, args.port)
    listening = http.listen(args.host, args.port)
    address = f"http://127.0.0.1:{args.port}/"
    if args.no_browser:
        print(f"pgrecall ui: {address}", file=sys.stderr, flush=True)
    else:
        open_browser_when_listening(address, args.port)
    return run_api(args, settings, listening)


def mcp_parts(settings: Settings, read_only: bool) -> tuple[Startup[Searcher], Startup[MemoryWriter] | None]:
    """The searcher's Startup (it loads the model meanwhile) and the memory client's, neither started."""
    from pgrecall.api.startup import Startup

    def load_model() -> None:
        from pgrecall.embedders.embedding import embedder_for

        embedder_for(settings).embed_queries(["pgrecall"])  # the Searcher's own

    memories = None if read_only else memory_startup(settings)

    def open_searcher() -> Searcher:
        if memories is not None and not settings.search_database_url:
            memories.wait()  # its migration first, so that a fresh home has an index; its failure is its own
        return searcher(settings, pool_size=2)

    return Startup(open_searcher, preload=load_model), memories


def run_mcp(args: argparse.Namespace, settings: Settings) -> int:
    from pgrecall import warm_client
    from pgrecall.api.mcp_server import serve_stdio
    from pgrecall.cli.warm import WarmSearcher
    from pgrecall.memory.notes import folder_of

    # The handshake is answered at once; the database, the model and the memory client start in
    # the background (after the SDK's import: started before it, they only slowed it down), tool calls wait.
    startup, memories = mcp_parts(settings, args.read_only)
    # While serve runs, searches ask its warm socket: this process loads no model, and opens the
    # memory client (the write path) only on the first write.
    index = WarmSearcher(settings, startup)
    warm = warm_client.answers(settings)
    if memories is not None and not warm:
        memories.start()
    if not warm:
        startup.start()
    serve_stdio(index, memories, folder_of(settings))
    return 0
