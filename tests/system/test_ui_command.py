"""`pgrecall ui`: the API on loopback with its page, and the browser opened; without a browser, the address printed."""

import os
import socket
import subprocess

import httpx

from tests.service import wait_for
from tests.support.cli import start_cli


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_ui_without_a_browser_serves_the_page_and_prints_its_address(db_url, tmp_path):
    env = dict(
        os.environ,
        PGRECALL_DATABASE_URL=db_url,
        PGRECALL_HOME=str(tmp_path),
        PGRECALL_LOG_FORMAT="json",
        PGRECALL_CONFIG=str(tmp_path / "no-config.toml"),
        BROWSER="false",  # the one "browser" there is fails, as on a server or in a container
    )
    env.pop("PGRECALL_API_TOKEN", None)
    env.pop("DISPLAY", None)
    port = _free_port()
    log = tmp_path / "ui.err"
    with open(log, "w") as stderr:
        server = start_cli("ui", "--port", str(port), env=env, stdout=subprocess.DEVNULL, stderr=stderr)
    try:
        address = f"http://127.0.0.1:{port}/"
        wait_for(lambda: f"open {address} in a browser" in log.read_text(), 120, message="the address printed")
        assert server.poll() is None  # no browser is no error: the server goes on
        page = httpx.get(address, params={"q": "anything"}, timeout=30)
        assert page.status_code == 200 and "<title>anything · pgrecall</title>" in page.text
        assert "default-src 'none'" in page.headers["content-security-policy"]
    finally:
        server.terminate()
        assert server.wait(30) == 0
