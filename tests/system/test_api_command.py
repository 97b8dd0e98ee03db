"""`pgrecall api` as a process: its port, its binding, its token and its read-only mode."""

import os
import socket
import subprocess

import httpx
import pytest

from pgrecall.api.http import READ_ONLY_REASON
from tests.service import wait_for
from tests.support.cli import run_cli, start_cli


def _notes(folder) -> list:
    return sorted(folder.rglob("*.md")) if folder.exists() else []


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize("port", ["70000", "0", "-1"])
def test_api_command_refuses_a_port_out_of_range_in_one_line(tmp_path, port):
    env = dict(os.environ, PGRECALL_HOME=str(tmp_path), PGRECALL_LOG_FORMAT="json")
    result = run_cli("api", "--port", port, env=env, timeout=120)
    assert result.returncode == 1
    assert result.stderr.strip() == f"pgrecall: error: --port must be from 1 to 65535, got {port}"


def test_api_command_refuses_an_editor_command_that_names_no_file_before_it_starts(tmp_path):
    env = dict(
        os.environ, PGRECALL_HOME=str(tmp_path), PGRECALL_LOG_FORMAT="json", PGRECALL_EDITOR_COMMAND="code --goto"
    )
    result = run_cli("api", "--port", str(_free_port()), env=env, timeout=120)
    assert result.returncode == 1
    assert result.stderr.strip() == (
        "pgrecall: error: PGRECALL_EDITOR_COMMAND must name {path}, the file to open: 'code --goto'"
    )
    assert not (tmp_path / "pgdata").exists()  # refused before the embedded server was started


def test_api_command_serves_on_loopback_and_refuses_open_binding_without_token(db_url, tmp_path):
    env = dict(
        os.environ,
        PGRECALL_DATABASE_URL=db_url,
        PGRECALL_HOME=str(tmp_path),
        PGRECALL_LOG_FORMAT="json",
        PGRECALL_CONFIG=str(tmp_path / "no-config.toml"),
    )
    env.pop("PGRECALL_API_TOKEN", None)
    refused = run_cli("api", "--host", "0.0.0.0", env=env, timeout=120)
    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        "pgrecall: error: listening on 0.0.0.0 needs PGRECALL_API_TOKEN: every request must then carry it"
    )
    port = _free_port()
    server = start_cli("api", "--port", str(port), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:

        def healthy():
            try:
                return httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200
            except httpx.TransportError:
                return False

        wait_for(healthy, 60, message="api up")
        assert httpx.get(f"http://127.0.0.1:{port}/search", params={"q": ""}).status_code == 422
        # The command's memory client opens on the first write; the note lands in PGRECALL_HOME/memories.
        saved = httpx.post(f"http://127.0.0.1:{port}/memories", json={"text": "Served by pgrecall api."}, timeout=60)
        assert saved.status_code == 201, saved.text
        assert (tmp_path / "memories" / saved.json()["path"]).is_file()
        found = httpx.get(f"http://127.0.0.1:{port}/search", params={"q": "served by pgrecall api", "k": 1})
        assert found.json()["hits"][0]["path"] == saved.json()["path"]
    finally:
        server.terminate()
        server.wait(30)


def test_api_command_read_only_refuses_writes_with_403(db_url, tmp_path):
    env = dict(
        os.environ,
        PGRECALL_DATABASE_URL=db_url,
        PGRECALL_HOME=str(tmp_path),
        PGRECALL_LOG_FORMAT="json",
        PGRECALL_CONFIG=str(tmp_path / "no-config.toml"),
    )
    env.pop("PGRECALL_API_TOKEN", None)
    port = _free_port()
    server = start_cli(
        "api", "--port", str(port), "--read-only", env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:

        def answered():
            try:
                return httpx.post(f"http://127.0.0.1:{port}/memories", json={"text": "A fact."}, timeout=2)
            except httpx.TransportError:
                return None

        response = wait_for(answered, 60, message="api up")
        assert response.status_code == 403 and response.json() == {"error": READ_ONLY_REASON}
        assert httpx.get(f"http://127.0.0.1:{port}/memories").json() == {"memories": [], "unreadable": []}
        assert not (tmp_path / "memories").exists() or _notes(tmp_path / "memories") == []
    finally:
        server.terminate()
        server.wait(30)


@pytest.mark.parametrize("command", [["api"], ["ui"], ["ui", "--no-browser"]])
def test_a_port_in_use_is_one_line_before_any_address_is_offered(db_url, tmp_path, command):
    """Another program listens on the port: the command says so in one line and exits 1, without
    first offering (or opening in a browser) the address where the other program answers."""
    env = dict(
        os.environ,
        PGRECALL_DATABASE_URL=db_url,
        PGRECALL_HOME=str(tmp_path),
        PGRECALL_LOG_FORMAT="json",
        BROWSER="false",
    )
    env.pop("PGRECALL_API_TOKEN", None)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = run_cli(*command, "--port", str(port), env=env, timeout=120)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"pgrecall: error: port {port} is in use on 127.0.0.1: another program listens there; "
        "choose another with --port"
    ]
    assert result.stdout == ""
