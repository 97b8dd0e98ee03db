"""The warm search service: a Searcher whose model is loaded, answering on a private Unix socket.

`pgrecall serve` runs one (pgrecall.cli.warm), so that hooks, `pgrecall search` and
`pgrecall mcp` get their answers without starting a model of their own
(pgrecall.warm_client is the client and describes the protocol). Read-only: it
answers search, get_document and recent with the Searcher it is given, nothing else.

The socket is created with mode 0600 before anyone can connect to it: bound in a
new folder of mode 0700 beside its path, then renamed over that path (replacing
the file a dead server left). Only processes of the same user are served
(SO_PEERCRED, where the system has it), never anything over TCP. A line longer than
MAX_REQUEST_BYTES is answered with an error and the connection closed; anything
malformed gets an error line; each search runs in a thread of a small pool, so
clients are served concurrently.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import inspect
import json
import os
import socket
import struct
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog

from pgrecall import contract
from pgrecall.errors import PgRecallError, first_line, reason
from pgrecall.warm_client import MAX_REQUEST_BYTES, answers_at, encode, error_answer

if TYPE_CHECKING:
    from pgrecall.api.searcher import IndexReader

IDLE_TIMEOUT_S = 300.0  # a connection that sends nothing for this long is closed
BACKLOG = 64

# What a search request may carry: search_request's parameters but the keyword-only ones
# (max_k: the engine's deeper limit is no interface's).
REQUEST_FIELDS = frozenset(
    name
    for name, parameter in inspect.signature(contract.search_request).parameters.items()
    if parameter.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
)
RECENT_FIELDS = frozenset(field.name for field in dataclasses.fields(contract.RecentRequest))

log = structlog.get_logger(__name__)


class SocketInUse(PgRecallError):
    """Another warm search service answers at this socket."""


def _error(exc: BaseException) -> dict[str, Any]:
    return error_answer(first_line(exc) if isinstance(exc, PgRecallError) else reason(exc), type(exc).__name__)


def answer(searcher: IndexReader, message: Any) -> dict[str, Any]:
    """The answer to one decoded request line: hits, a document, or an error (never raised)."""
    try:
        if not isinstance(message, dict):
            return error_answer("a request is a JSON object", "InvalidInput")
        op = message.get("op")
        if op == "search":
            fields = message.get("request")
            if not isinstance(fields, dict):
                return error_answer("a search carries its request as a JSON object", "InvalidInput")
            unknown = sorted(set(fields) - REQUEST_FIELDS)
            if unknown:
                return error_answer(f"unknown request field {unknown[0][:40]!r}", "InvalidInput")
            request = contract.search_request(**fields)
            return {"ok": True, "hits": [hit.to_json() for hit in searcher.run(request)]}
        if op == "get_document":
            id_or_path = message.get("id_or_path")
            if isinstance(id_or_path, bool) or not isinstance(id_or_path, int | str):
                return error_answer("id_or_path must be a document id or a path", "InvalidInput")
            found = searcher.get_document(id_or_path)
            return {"ok": True, "document": found.to_dict() if found is not None else None}
        if op == "recent":
            fields = message.get("request")
            if not isinstance(fields, dict) or set(fields) - RECENT_FIELDS:
                return error_answer("a recent request carries the fields of a RecentRequest", "InvalidInput")
            request = contract.recent_request(**fields)
            return {"ok": True, "documents": [document.to_json() for document in searcher.recent(request)]}
        return error_answer(f"unknown op {str(op)[:40]!r}; use search, get_document or recent", "InvalidInput")
    except Exception as exc:  # the client gets the reason in one line; the service goes on
        return _error(exc)


def bind_private(path: Path) -> socket.socket:
    """A listening socket at `path` that only its owner can connect to; SocketInUse when a server
    answers there already. A file left there by a dead server is replaced."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    if answers_at(path):
        raise SocketInUse(f"another warm search service answers at {path}")
    folder = tempfile.mkdtemp(prefix=".", dir=path.parent)  # mode 0700: no one else can reach the socket
    temporary = os.path.join(folder, "s")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(temporary)
        os.chmod(temporary, 0o600)
        sock.listen(BACKLOG)
        os.replace(temporary, path)
    except BaseException:
        sock.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
    finally:
        os.rmdir(folder)
    return sock


def _same_user(sock: socket.socket | None) -> bool:
    if sock is None or not hasattr(socket, "SO_PEERCRED"):
        return True  # the socket's mode (0600) is then the only guard
    credentials = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", credentials)
    return uid == os.geteuid()


class WarmServer:
    """Serves `searcher` at `path` from start() until close(); the socket file is removed at close."""

    def __init__(self, searcher: IndexReader, path: Path, workers: int = 4):
        self.searcher = searcher
        self.path = path
        self._executor = concurrent.futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="pgrecall-warm")
        self._server: asyncio.Server | None = None
        self._inode: int | None = None
        self._connections: dict[asyncio.Task, asyncio.StreamWriter] = {}
        self._closing = False

    async def start(self) -> None:
        sock = bind_private(self.path)
        self._inode = os.stat(self.path).st_ino
        self._server = await asyncio.start_unix_server(self._accepted, sock=sock, limit=MAX_REQUEST_BYTES)
        log.info("warm_socket_listening", path=str(self.path))

    async def close(self) -> None:
        self._remove_socket_file()  # no new client finds it: they answer in-process from now on
        if self._server is not None:
            # Python 3.11's Server.close() leaks a connection accepted just before it whose
            # transport is made after it (an assertion in Server._attach): let the connections that
            # clients made before the file went away be accepted and made first. Three turns of the
            # loop: one to accept them all (the backlog at once), one to make them, one to spare.
            for _ in range(3):
                await asyncio.sleep(0)
            self._server.close()
            self._closing = True  # one made after all the same is closed as it is made (_accepted)
            for task, writer in list(self._connections.items()):
                task.cancel()  # a task cancelled before it ran never closes its connection: closed here
                writer.close()
            for task in list(self._connections):
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            await self._server.wait_closed()
            self._server = None
        self._executor.shutdown(wait=True, cancel_futures=True)

    def _remove_socket_file(self) -> None:
        """Only our own: a server started after us on the same path keeps its file."""
        try:
            if self._inode is not None and os.stat(self.path).st_ino == self._inode:
                os.unlink(self.path)
        except FileNotFoundError:
            pass
        self._inode = None

    def _accepted(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Called as the connection is made: each is known to close() before its task runs."""
        if self._closing:
            writer.close()
            return
        task = asyncio.get_running_loop().create_task(self._serve(reader, writer))
        self._connections[task] = writer
        task.add_done_callback(lambda done: self._connections.pop(done, None))

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            if not _same_user(writer.get_extra_info("socket")):
                writer.write(encode(error_answer("only the service's own user may connect")))
                await writer.drain()
                return
            while True:
                try:
                    line = await asyncio.wait_for(reader.readline(), IDLE_TIMEOUT_S)
                except TimeoutError:
                    return
                except ValueError:  # longer than the limit: the rest of it cannot be told from a next request
                    writer.write(
                        encode(error_answer(f"a request is at most {MAX_REQUEST_BYTES} bytes", "InvalidInput"))
                    )
                    await writer.drain()
                    return
                if not line:
                    return
                writer.write(await self._answer(line))
                await writer.drain()
        except (ConnectionResetError, BrokenPipeError):
            pass  # the client went away before its answer
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    async def _answer(self, line: bytes) -> bytes:
        try:
            message = json.loads(line)
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
            return encode(error_answer("a request is one line of JSON", "InvalidInput"))
        loop = asyncio.get_running_loop()
        reply = await loop.run_in_executor(self._executor, answer, self.searcher, message)
        try:
            return encode(reply)
        except (TypeError, ValueError) as exc:
            return encode(_error(exc))
