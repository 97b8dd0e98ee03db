"""A fake systemd notify socket: what systemd offers a Type=notify unit (an AF_UNIX datagram socket
named by NOTIFY_SOCKET), asking for the sender's credentials as systemd does for NotifyAccess=main."""

from __future__ import annotations

import socket
import struct
import threading
import time
from pathlib import Path

from pgrecall.worker import sdnotify

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
