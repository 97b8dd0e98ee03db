"""The sd_notify protocol without libsystemd: one datagram per message to $NOTIFY_SOCKET.

systemd sets NOTIFY_SOCKET for a unit with Type=notify (and WATCHDOG_USEC with
WatchdogSec=). Messages are newline-separated KEY=VALUE lines: READY=1 when the
service runs, STATUS=... for `systemctl status`, WATCHDOG=1 at least once per
watchdog interval (we send at half of it), STOPPING=1 on shutdown. Without
NOTIFY_SOCKET every call is a no-op; a socket that went away never raises into
the service, it is logged once.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Mapping, MutableMapping

import structlog

log = structlog.get_logger("pgrecall.sdnotify")

_VARIABLES = ("NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID")


def socket_address(value: str) -> str | bytes:
    """NOTIFY_SOCKET as an AF_UNIX address: a leading '@' names the abstract namespace."""
    if value.startswith("@"):
        return b"\0" + value[1:].encode()
    return value


def watchdog_seconds(environ: Mapping[str, str], pid: int) -> float | None:
    """The watchdog timeout systemd asked for, or None (unset, malformed, or meant for another process)."""
    usec = environ.get("WATCHDOG_USEC", "")
    wanted_pid = environ.get("WATCHDOG_PID", "")
    if wanted_pid and wanted_pid != str(pid):
        return None
    try:
        value = int(usec)
    except ValueError:
        return None
    return value / 1_000_000 if value > 0 else None


def message(**fields: str | int) -> bytes:
    """KEY=VALUE lines; a value keeps to one line (STATUS= is shown on one line anyway)."""
    lines = []
    for key, value in fields.items():
        text = " ".join(str(value).split()) if key == "STATUS" else str(value)
        lines.append(f"{key}={text}")
    return "\n".join(lines).encode()


class Notifier:
    """Talks to the service manager, or does nothing when none listens."""

    def __init__(self, address: str | None, watchdog_timeout: float | None = None):
        self.address = address
        self.watchdog_timeout = watchdog_timeout if address else None
        self._socket: socket.socket | None = None
        self._failed = False
        self._last_ping: float | None = None

    @classmethod
    def from_environ(cls, environ: MutableMapping[str, str] | None = None, *, unset: bool = True) -> Notifier:
        """Read NOTIFY_SOCKET and WATCHDOG_USEC/_PID; with unset, remove them so that child processes
        (the embedded PostgreSQL) do not speak to the service manager in our name."""
        environ = os.environ if environ is None else environ
        notifier = cls(environ.get("NOTIFY_SOCKET") or None, watchdog_seconds(environ, os.getpid()))
        if unset:
            for name in _VARIABLES:
                environ.pop(name, None)
        return notifier

    @property
    def enabled(self) -> bool:
        return self.address is not None

    @property
    def watchdog_interval(self) -> float | None:
        """How often to send WATCHDOG=1: half the timeout, as sd_watchdog_enabled(3) advises."""
        return self.watchdog_timeout / 2 if self.watchdog_timeout else None

    def send(self, **fields: str | int) -> bool:
        if self.address is None:
            return False
        try:
            if self._socket is None:
                self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
            self._socket.sendto(message(**fields), socket_address(self.address))
        except OSError as exc:
            if not self._failed:
                self._failed = True
                log.warning("notify_failed", socket=self.address, error=f"{type(exc).__name__}: {exc}")
            return False
        if self._failed:
            self._failed = False
            log.info("notify_recovered", socket=self.address)
        return True

    def ready(self, status: str | None = None) -> bool:
        return self.send(READY=1, **({"STATUS": status} if status else {}))

    def status(self, text: str) -> bool:
        return self.send(STATUS=text)

    def watchdog(self) -> bool:
        return self.send(WATCHDOG=1)

    def keepalive(self) -> bool:
        """WATCHDOG=1 if systemd asked for a watchdog and the last ping is most of an interval old.

        Call it at least twice per interval (a tick of half the interval): pings then
        come about once per interval, and never more than 0.7 timeouts apart.
        """
        interval = self.watchdog_interval
        if interval is None:
            return False
        now = time.monotonic()
        if self._last_ping is not None and now - self._last_ping < 0.9 * interval:
            return False
        self._last_ping = now
        return self.watchdog()

    def stopping(self, status: str | None = None) -> bool:
        return self.send(STOPPING=1, **({"STATUS": status} if status else {}))

    def close(self) -> None:
        if self._socket is not None:
            self._socket.close()
            self._socket = None
