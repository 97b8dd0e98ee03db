"""sd_notify: the protocol unit by unit, then `pgrecall serve` and `watch` against a fake notify socket.

The fake socket is what systemd offers a Type=notify unit: an AF_UNIX datagram
socket named by NOTIFY_SOCKET. It asks for the sender's credentials
(SO_PASSCRED), as systemd does for NotifyAccess=main, so the tests also check
that every message comes from the service's main process.
"""

from __future__ import annotations

import os
import re
import socket
import struct
import tempfile
import threading
import time
import uuid
from pathlib import Path

import pytest
import structlog

from pgrecall import sdnotify
from pgrecall.sdnotify import Notifier
from tests.notes import write_notes
from tests.service import Process, service_env, texts, wait_for

_CREDENTIALS = struct.Struct("3i")  # struct ucred: pid, uid, gid


class NotifySocket:
    """A datagram socket that records (monotonic time, sender pid, message) from a background thread."""

    def __init__(self, address: str):
        self.address = address
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(sdnotify.socket_address(address))
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        self.sock.settimeout(0.2)
        self.messages: list[tuple[float, int | None, str]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._receive, daemon=True)
        self._thread.start()

    def _receive(self) -> None:
        while not self._stop.is_set():
            try:
                data, ancillary, _, _ = self.sock.recvmsg(4096, socket.CMSG_SPACE(_CREDENTIALS.size))
            except TimeoutError:
                continue
            except OSError:
                return
            pid = None
            for level, kind, payload in ancillary:
                if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
                    pid = _CREDENTIALS.unpack(payload[: _CREDENTIALS.size])[0]
            self.messages.append((time.monotonic(), pid, data.decode()))

    def find(self, key: str) -> list[tuple[float, int | None, str]]:
        """Messages holding a KEY=... line; for STATUS the value is what follows."""
        found = []
        for at, pid, text in list(self.messages):
            for line in text.split("\n"):
                if line.startswith(key + "="):
                    found.append((at, pid, line[len(key) + 1 :]))
        return found

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self.sock.close()
        if not self.address.startswith("@"):
            Path(self.address).unlink(missing_ok=True)


@pytest.fixture
def notify_socket(tmp_path):
    path = tmp_path / "notify.sock"
    if len(str(path)) > 100:  # sun_path holds 108 bytes
        path = Path(tempfile.mkdtemp(prefix="pgrecall-notify-")) / "notify.sock"
    listener = NotifySocket(str(path))
    yield listener
    listener.close()


# --- the protocol, without a service ---------------------------------------------------------


def test_message_format_is_key_value_lines_and_status_stays_on_one_line():
    assert sdnotify.message(READY=1, STATUS="queue: 3 waiting\nmore") == b"READY=1\nSTATUS=queue: 3 waiting more"
    assert sdnotify.message(WATCHDOG=1) == b"WATCHDOG=1"


def test_socket_address_maps_a_leading_at_to_the_abstract_namespace():
    assert sdnotify.socket_address("@pgrecall/notify") == b"\0pgrecall/notify"
    assert sdnotify.socket_address("/run/systemd/notify") == "/run/systemd/notify"


def test_messages_reach_an_abstract_socket():
    listener = NotifySocket(f"@pgrecall-test-{uuid.uuid4().hex}")
    try:
        notifier = Notifier(listener.address)
        assert notifier.ready("starting") and notifier.status("queue: 2 waiting") and notifier.stopping()
        wait_for(lambda: len(listener.messages) == 3, 5, message="three datagrams")
        assert [m for _, _, m in listener.messages] == [
            "READY=1\nSTATUS=starting",
            "STATUS=queue: 2 waiting",
            "STOPPING=1",
        ]
        assert {pid for _, pid, _ in listener.messages} == {os.getpid()}
        notifier.close()
    finally:
        listener.close()


def test_without_notify_socket_every_call_is_a_no_op():
    environ = {"WATCHDOG_USEC": "2000000"}
    notifier = Notifier.from_environ(environ)
    assert not notifier.enabled
    assert notifier.watchdog_interval is None
    assert not notifier.ready() and not notifier.keepalive() and not notifier.stopping()


def test_from_environ_reads_the_watchdog_and_hides_the_socket_from_children():
    environ = {"NOTIFY_SOCKET": "@x", "WATCHDOG_USEC": "60000000", "WATCHDOG_PID": str(os.getpid()), "HOME": "/h"}
    notifier = Notifier.from_environ(environ)
    assert notifier.address == "@x"
    assert notifier.watchdog_timeout == 60.0 and notifier.watchdog_interval == 30.0
    assert environ == {"HOME": "/h"}  # the embedded PostgreSQL must not notify in our name


@pytest.mark.parametrize(
    ("usec", "pid", "expected"),
    [("2000000", None, 2.0), ("2000000", "self", 2.0), ("2000000", "1", None), ("0", None, None), ("x", None, None)],
)
def test_watchdog_seconds(usec, pid, expected):
    environ = {"WATCHDOG_USEC": usec}
    if pid is not None:
        environ["WATCHDOG_PID"] = str(os.getpid()) if pid == "self" else pid
    assert sdnotify.watchdog_seconds(environ, os.getpid()) == expected


def test_keepalive_pings_about_once_per_interval():
    listener = NotifySocket(f"@pgrecall-test-{uuid.uuid4().hex}")
    try:
        notifier = Notifier(listener.address, watchdog_timeout=0.4)  # ping every 0.2 s
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            notifier.keepalive()
            time.sleep(0.05)
        wait_for(lambda: len(listener.messages) >= 4, 5, message="pings")
        assert 4 <= len(listener.messages) <= 6, listener.messages
        notifier.close()
    finally:
        listener.close()


def test_a_vanished_socket_is_logged_once_and_never_raises(tmp_path):
    listener = NotifySocket(str(tmp_path / "gone.sock"))
    notifier = Notifier(listener.address)
    assert notifier.ready()
    listener.close()  # the manager went away
    with structlog.testing.capture_logs() as logs:
        assert not notifier.status("one")
        assert not notifier.watchdog()
        assert not notifier.stopping()
    notifier.close()
    assert [entry["event"] for entry in logs] == ["notify_failed"]


# --- the service --------------------------------------------------------------------------------


@pytest.mark.slow
def test_serve_speaks_sd_notify(db_url, tmp_path, notify_socket):
    notes = write_notes(tmp_path / "notes", {"a.md": "# A\n\nAlpha note about lighthouses."})
    env = service_env(
        db_url, tmp_path / "home", NOTIFY_SOCKET=notify_socket.address, WATCHDOG_USEC="2000000"
    )  # a 2 s watchdog: ping every second
    service = Process(["serve", str(notes)], env, tmp_path / "serve.log")
    try:
        wait_for(lambda: notify_socket.find("READY"), 90, message="READY=1")
        ready_at = notify_socket.find("READY")[0][0]
        assert service.events("watch_started"), "READY=1 before the watcher ran"
        # A note saved right after READY=1 is seen by the watcher and indexed.
        (notes / "fresh.md").write_text("# Fresh\n\nSaved the moment the service said it was ready: about auroras.")
        wait_for(lambda: "auroras" in texts(db_url, "fresh.md"), 60, message="note saved after READY indexed")

        # STATUS= carries the queue depth and, once something is indexed, the time of it.
        statuses = [text for _, _, text in notify_socket.find("STATUS")]
        assert all(re.match(r"queue: \d+ waiting, \d+ running; last indexed: ", s) for s in statuses), statuses
        wait_for(
            lambda: any(
                at > ready_at and "last indexed: never" not in text for at, _, text in notify_socket.find("STATUS")
            ),
            30,
            message="a STATUS= refresh with the last indexed time",
        )

        # WATCHDOG=1 about once per second (half the 2 s timeout), from the watcher's loop.
        wait_for(lambda: len(notify_socket.find("WATCHDOG")) >= 5, 20, message="five pings")
        pings = [at for at, _, _ in notify_socket.find("WATCHDOG")]
        gaps = [b - a for a, b in zip(pings, pings[1:], strict=False)]
        assert all(0.5 <= gap <= 1.6 for gap in gaps), gaps

        assert service.stop() == 0
        wait_for(lambda: notify_socket.find("STOPPING"), 5, message="STOPPING=1")
        stopping_at = notify_socket.find("STOPPING")[0][0]
        assert all(at <= stopping_at for at, _, _ in notify_socket.find("READY"))
        # NotifyAccess=main: systemd accepts messages from the main process only.
        assert {pid for _, pid, _ in notify_socket.messages} == {service.popen.pid}
    finally:
        if service.popen.poll() is None:
            service.kill()


@pytest.mark.slow
def test_watch_status_reports_the_queue_depth(db_url, tmp_path, notify_socket):
    """`watch` alone (no worker): the jobs it enqueues stay, so STATUS= must count them exactly."""
    notes = tmp_path / "notes"
    notes.mkdir()
    env = service_env(db_url, tmp_path / "home", NOTIFY_SOCKET=notify_socket.address, WATCHDOG_USEC="2000000")
    service = Process(["watch", str(notes)], env, tmp_path / "watch.log")
    try:
        wait_for(lambda: notify_socket.find("READY"), 60, message="READY=1")
        assert notify_socket.find("STATUS")[0][2].startswith("queue: 0 waiting, 0 running; last indexed: never")
        for number in range(3):
            (notes / f"n{number}.md").write_text(f"# Note {number}\n\nWaiting in the queue.")
        wait_for(
            lambda: any(text.startswith("queue: 3 waiting, 0 running") for _, _, text in notify_socket.find("STATUS")),
            30,
            message="STATUS= with 3 waiting",
        )
        # the notes and the memory folder, which watch always follows
        assert "roots: 2 by events, 0 polled" in notify_socket.find("STATUS")[-1][2]
        assert len(notify_socket.find("WATCHDOG")) >= 3
        assert service.stop() == 0
        wait_for(lambda: notify_socket.find("STOPPING"), 5, message="STOPPING=1")
    finally:
        if service.popen.poll() is None:
            service.kill()


# --- the units in deploy/ -------------------------------------------------------------------------

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
UNITS = {  # unit file -> (name to check it under, path of pgrecall in ExecStart)
    "pgrecall.service": ("pgrecall.service", "%h/pgrecall/.venv/bin/pgrecall"),
    "pgrecall-worker@.service": ("pgrecall-worker@1.service", "/var/lib/pgrecall/app/.venv/bin/pgrecall"),
    "pgrecall-watch.service": ("pgrecall-watch.service", "/var/lib/pgrecall/app/.venv/bin/pgrecall"),
}


@pytest.fixture
def systemd_analyze():
    import shutil

    binary = shutil.which("systemd-analyze")
    if binary is None:
        pytest.skip("systemd-analyze is not installed (Debian/Ubuntu: apt-get install systemd)")
    return binary


@pytest.mark.parametrize("unit", sorted(UNITS))
def test_units_are_notify_services_that_verify_and_are_hardened(unit, tmp_path, systemd_analyze):
    import subprocess
    import sys

    name, exec_path = UNITS[unit]
    text = (DEPLOY / unit).read_text()
    for directive in ("Type=notify", "NotifyAccess=main", "WatchdogSec=", "Restart=on-failure", "UMask=0077"):
        assert f"\n{directive}" in text, directive
    assert exec_path in text
    # Checked with the venv in place: ExecStart must name a real executable.
    (tmp_path / name).write_text(text.replace(exec_path, str(Path(sys.executable).parent / "pgrecall")))
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    env = {**os.environ, "XDG_RUNTIME_DIR": str(runtime)}
    verify = subprocess.run(
        [systemd_analyze, "verify", name], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )
    assert verify.returncode == 0 and not verify.stderr.strip(), verify.stderr
    security = subprocess.run(
        [systemd_analyze, "security", "--offline=true", name],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    found = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", security.stdout)
    assert found, security.stdout + security.stderr
    assert float(found.group(1)) <= 4.0, security.stdout
