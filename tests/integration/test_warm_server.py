"""The warm search service on a real index, started in this process, asked through the real client."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import datetime
import json
import os
import shutil
import socket
import stat
import tempfile
import threading
from pathlib import Path

import pytest

from pgrecall import contract, warm_client
from pgrecall.api.warm_server import SocketInUse, WarmServer
from pgrecall.cli.warm import WarmSearcher, document_of
from pgrecall.errors import InvalidInput
from pgrecall.warm_client import MAX_REQUEST_BYTES
from tests.notes import ERROR_CODE_NOTES, write_notes


class Loop:
    """An event loop in a thread of its own, as serve's is to its clients."""

    def __init__(self):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coroutine, timeout: float = 60):
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    def close(self) -> None:
        self.run(self._cancel_the_rest())  # as asyncio.run ends: an accept under way closes what it opened
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(30)
        self.loop.close()

    @staticmethod
    async def _cancel_the_rest() -> None:
        others = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
        for task in others:
            task.cancel()
        await asyncio.gather(*others, return_exceptions=True)


@pytest.fixture
def indexed(index, tmp_path):
    root = write_notes(tmp_path / "notes", ERROR_CODE_NOTES)
    index(root)
    return root


@pytest.fixture
def loop():
    running = Loop()
    yield running
    running.close()


@pytest.fixture
def warm(indexed, searcher, settings, loop):
    """The service at the settings' socket (PGRECALL_HOME/search.sock), serving the test's index."""
    server = WarmServer(searcher, warm_client.socket_path(settings))
    loop.run(server.start())
    yield server
    loop.run(server.close())


def exchange(path, data: bytes) -> list[dict]:
    """Send raw bytes on one connection, then read every answer line until the service closes it."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(60)
        sock.connect(str(path))
        try:
            sock.sendall(data)
            sock.shutdown(socket.SHUT_WR)
        except (BrokenPipeError, ConnectionResetError):
            pass  # it closed the connection before reading all of it: its answer is still there to read
        received = b""
        while chunk := sock.recv(1 << 16):
            received += chunk
    return [json.loads(line) for line in received.splitlines()]


def test_the_socket_is_private_and_removed_at_close(indexed, searcher, settings, loop):
    path = warm_client.socket_path(settings)
    assert path == settings.home / "search.sock"
    before = {p.name for p in path.parent.iterdir()}  # the home the index run made (its memory folder)
    server = WarmServer(searcher, path)
    loop.run(server.start())
    mode = os.stat(path).st_mode
    assert stat.S_ISSOCK(mode) and stat.S_IMODE(mode) == 0o600
    assert {p.name for p in path.parent.iterdir()} - before == {"search.sock"}  # its private folder is gone
    assert warm_client.answers(settings)
    loop.run(server.close())
    assert not path.exists()
    assert warm_client.search(contract.search_request("E-4711"), settings) is None


def test_answers_equal_the_in_process_answers(warm, searcher, settings):
    since = datetime.datetime(2000, 1, 1, tzinfo=datetime.UTC)
    requests = [
        contract.search_request("E-4711", k=3),
        contract.search_request("why did the export fail", k=4, fusion="rrf"),
        contract.search_request("autovacuum", k=2, mode="keyword", filters={"kind": "text"}),
        contract.search_request("tomatoes", k=2, mode="vector", filters={"modified_since": since.isoformat()}),
        contract.search_request("storage throttled", k=3, enrich=True, filters={"path_prefix": "incidents/"}),
    ]
    for request in requests:
        expected = searcher.run(dataclasses.replace(request, fusion=request.fusion or settings.fusion))
        got = warm_client.search(request, settings)
        assert got == expected, request
        assert [hit.to_json() for hit in got] == [hit.to_json() for hit in expected]
    assert got and all(hit.path.startswith("incidents/") for hit in got)

    document_id = searcher.run(requests[0])[0].document_id
    for key in (document_id, str(document_id), "incidents/e4711.md"):
        found = warm_client.get_document(key, settings)
        assert found is not None and document_of(found.document) == searcher.get_document(key)
    assert warm_client.get_document("no/such.md", settings) == warm_client.Found(None)


def test_errors_are_answers_and_the_service_goes_on(warm, settings):
    path = warm.path
    with pytest.raises(InvalidInput, match="empty"):
        warm_client.call({"op": "get_document", "id_or_path": " "}, settings)
    with pytest.raises(InvalidInput, match="k must be"):
        warm_client.call({"op": "search", "request": {"query": "x", "k": 1000}}, settings)
    with pytest.raises(InvalidInput, match="limit"):
        warm_client.call({"op": "recent", "request": {"since": "2026-01-01", "limit": 0}}, settings)
    for fields in ({"since": "2026-01-01", "owner": "me"}, "7d"):
        with pytest.raises(InvalidInput, match="the fields of a RecentRequest"):
            warm_client.call({"op": "recent", "request": fields}, settings)
    lines = (
        b"not json\n"
        b"[1, 2]\n"
        b'{"op": "drop_everything"}\n'
        b'{"op": "search", "request": {"query": "x", "max_k": 1000}}\n'
        b'{"op": "search", "request": "E-4711"}\n'
        b'{"op": "search", "request": {"query": "x", "mode": "sideways"}}\n'
        b'{"op": "get_document", "id_or_path": true}\n'
        b"\xff\xfe\n" + b"[" * 100_000 + b"\n"
        b'{"op": "search", "request": {"query": "E-4711", "k": 1}}\n'
    )
    answers = exchange(path, lines)
    assert len(answers) == 10
    assert all(a["ok"] is False and a["type"] == "InvalidInput" and "\n" not in a["error"] for a in answers[:9])
    assert "unknown op" in answers[2]["error"] and "max_k" in answers[3]["error"] and "mode" in answers[5]["error"]
    assert answers[9]["ok"] and answers[9]["hits"][0]["path"] == "incidents/e4711.md"  # the same connection goes on

    too_long = exchange(path, b'{"op": "search", "request": {"query": "' + b"a" * MAX_REQUEST_BYTES + b'"}}\n')
    assert len(too_long) == 1 and "at most" in too_long[0]["error"]  # answered, then the connection closed
    assert warm_client.search(contract.search_request("E-4711", k=1), settings)[0].path == "incidents/e4711.md"


def test_clients_are_served_concurrently(warm, searcher, settings):
    queries = ["E-4711", "E-4712", "tomatoes south bed", "autovacuum scale factor", "export job failed"] * 4
    expected = {q: searcher.run(contract.search_request(q, k=3, fusion=settings.fusion)) for q in set(queries)}
    # A client that sends half a line and waits holds no one up.
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as idle:
        idle.connect(str(warm.path))
        idle.sendall(b'{"op": "search", "request": {"query": ')
        with concurrent.futures.ThreadPoolExecutor(max_workers=6) as pool:
            got = list(pool.map(lambda q: warm_client.search(contract.search_request(q, k=3), settings), queries))
    assert got == [expected[q] for q in queries]


def test_a_stale_socket_is_replaced_and_a_live_one_is_kept(indexed, searcher, settings, loop):
    path = warm_client.socket_path(settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(path))  # a server that died without removing its file
    dead.close()
    assert path.exists() and not warm_client.answers(settings)
    assert warm_client.search(contract.search_request("E-4711"), settings) is None  # fails fast: no server

    first = WarmServer(searcher, path)
    loop.run(first.start())
    assert warm_client.search(contract.search_request("E-4711", k=1), settings)[0].path == "incidents/e4711.md"
    second = WarmServer(searcher, path)
    with pytest.raises(SocketInUse):
        loop.run(second.start())
    loop.run(second.close())  # a server that never listened removes nothing
    assert warm_client.search(contract.search_request("E-4712", k=1), settings)[0].path == "incidents/e4712.md"
    loop.run(first.close())
    assert not path.exists()


def test_the_mcp_searcher_asks_the_socket_and_falls_back_in_process(warm, searcher, settings):
    class Local:  # a Startup's interface, counting the callers that needed the in-process searcher
        calls = 0

        def get(self):
            Local.calls += 1
            return searcher

        def close(self):
            pass

    index = WarmSearcher(settings, Local())
    request = contract.search_request("E-4711", k=2)
    assert index.get().run(request)[0].path == "incidents/e4711.md"
    assert index.get_document("incidents/e4711.md").path == "incidents/e4711.md"
    assert index.get_document("no/such.md") is None
    recent = contract.recent_request(days=36600, limit=3)
    assert [document.path for document in index.recent(recent)] == [d.path for d in searcher.recent(recent)]
    assert index.recent(recent) == searcher.recent(recent) and len(index.recent(recent)) == 3
    assert Local.calls == 0

    off = dataclasses.replace(settings, warm_socket="off")
    assert warm_client.socket_path(off) is None
    fallback = WarmSearcher(off, Local())
    assert fallback.run(request) == searcher.run(request)
    assert fallback.get_document("incidents/e4711.md") == searcher.get_document("incidents/e4711.md")
    assert fallback.recent(recent) == searcher.recent(recent)
    assert Local.calls == 3


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can make a client of another user")
def test_a_client_of_another_user_is_refused(indexed, searcher, loop):
    # Not under tmp_path: its folders (mode 0700) would stop the other user before the service could.
    folder = Path(tempfile.mkdtemp(prefix="pgrecall-warm-"))
    try:
        folder.chmod(0o755)
        server = WarmServer(searcher, folder / "search.sock")
        loop.run(server.start())
        os.chmod(server.path, 0o666)  # past the socket's own guard, to reach the service's
        read_end, write_end = os.pipe()
        child = os.fork()
        if child == 0:  # the client, as nobody: it only connects, asks and reports
            try:
                os.setuid(65534)
                with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                    sock.settimeout(60)
                    sock.connect(str(server.path))
                    # The refusal comes at connection, and the service may have closed by the time
                    # the request is sent: the answer is read whether or not the send got through.
                    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                        sock.sendall(b'{"op": "search", "request": {"query": "E-4711"}}\n')
                    os.write(write_end, sock.makefile("rb").readline())
            except BaseException as exc:  # what the parent then shows, instead of an empty answer
                os.write(write_end, repr(exc).encode())
            finally:
                os._exit(0)
        os.close(write_end)
        with os.fdopen(read_end, "rb") as answer:
            reply = answer.read()
        os.waitpid(child, 0)
        loop.run(server.close())
        assert reply.startswith(b"{"), reply
        assert json.loads(reply) == {
            "ok": False,
            "error": "only the service's own user may connect",
            "type": "WarmServiceError",
        }
    finally:
        shutil.rmtree(folder, ignore_errors=True)
