"""sd_notify: the protocol unit by unit, against a fake notify socket (tests.support.notify_socket).

The service and the systemd units are in tests/system/test_notify.py.
"""

from __future__ import annotations

import os
import uuid

import pytest
import structlog

from pgrecall.worker import sdnotify
from pgrecall.worker.sdnotify import Notifier
from tests.service import wait_for
from tests.support.notify_socket import NotifySocket


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
        wait_for(lambda: len(listener.messages) == 3, 60, message="three datagrams")
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


def test_keepalive_pings_about_once_per_interval(monkeypatch):
    listener = NotifySocket(f"@pgrecall-test-{uuid.uuid4().hex}")
    clock = [0.0]  # the notifier's clock, moved by the test: a tick every 0.05 s for 1 s
    monkeypatch.setattr(sdnotify, "time", type("Clock", (), {"monotonic": staticmethod(lambda: clock[0])}))
    try:
        notifier = Notifier(listener.address, watchdog_timeout=0.4)  # ping every 0.2 s
        sent = []
        for tick in range(20):
            clock[0] = tick * 0.05
            if notifier.keepalive():
                sent.append(tick)
        assert sent == [0, 4, 8, 12, 16]
        wait_for(lambda: len(listener.messages) == 5, 60, message="pings")
        assert {m for _, _, m in listener.messages} == {"WATCHDOG=1"}
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
