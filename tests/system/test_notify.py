"""`pgrecall serve` and `watch` against a fake notify socket, and the systemd units that run them.

Every message must come from the service's main process (the fake socket asks for the
sender's credentials, as systemd does for NotifyAccess=main)."""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

import pytest

from tests.notes import write_notes
from tests.service import Process, service_env, texts, wait_for
from tests.support.notify_socket import NotifySocket


@pytest.fixture
def notify_socket(tmp_path):
    path = tmp_path / "notify.sock"
    if len(str(path)) > 100:  # sun_path holds 108 bytes
        path = Path(tempfile.mkdtemp(prefix="pgrecall-notify-")) / "notify.sock"
    listener = NotifySocket(str(path))
    yield listener
    listener.close()


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
        # How late a ping comes depends on the machine's load: only the rate limit (0.9 of the
        # interval between two) is asserted, over the whole span, so one received late is no matter.
        wait_for(lambda: len(notify_socket.find("WATCHDOG")) >= 5, 60, message="five pings")
        pings = [at for at, _, _ in notify_socket.find("WATCHDOG")]
        assert len(pings) <= (pings[-1] - pings[0]) / 0.9 + 2, pings

        assert service.stop() == 0
        wait_for(lambda: notify_socket.find("STOPPING"), 60, message="STOPPING=1")
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
        wait_for(lambda: notify_socket.find("STOPPING"), 60, message="STOPPING=1")
    finally:
        if service.popen.poll() is None:
            service.kill()


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
