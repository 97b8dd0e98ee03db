"""Ask the warm search service of a running `pgrecall serve` over its private Unix socket.

Each call returns None when no service answers there (no socket file, a stale one
left by a dead server, the setting off): the caller then answers in-process.
Connecting fails at once in those cases; nothing is retried. An answer that is an
error is raised as the error the server met (InvalidInput, ...), in one line.

The protocol, one JSON object per line each way (pgrecall.api.warm_server answers):
    {"op": "search", "request": {<the fields of contract.SearchRequest>}}
        -> {"ok": true, "hits": [<Hit.to_json()>, ...]}
    {"op": "get_document", "id_or_path": 12}
        -> {"ok": true, "document": <the document's JSON> | null}
    {"op": "recent", "request": {<the fields of contract.RecentRequest>}}
        -> {"ok": true, "documents": [<RecentDocument.to_json()>, ...]}
    any failure -> {"ok": false, "error": "one line", "type": "InvalidInput"}
A request is carried as its dataclass fields and rebuilt by contract.search_request (recent_request),
so fields added to SearchRequest pass through unchanged.

Imports only the standard library and pgrecall.contract: its point is a process
that starts fast (hooks, `pgrecall search`), without the model, numpy or psycopg.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import socket
from pathlib import Path
from typing import Any

from pgrecall import contract, errors
from pgrecall.contract import Hit, RecentRequest, SearchRequest
from pgrecall.settings import Settings

SOCKET_NAME = "search.sock"
OFF = frozenset({"off", "false", "no", "0"})
MAX_REQUEST_BYTES = 256 * 1024  # a request line, newline included; longer ones are refused
MAX_ANSWER_BYTES = 512 * 1024 * 1024  # a whole document may be large (PGRECALL_MAX_FILE_BYTES)
DEFAULT_TIMEOUT_S = 60.0


class WarmServiceError(errors.PgRecallError):
    """The warm search service failed."""


class WarmTimeout(WarmServiceError):
    """The warm search service did not answer in time."""


# The errors a server's answer can name; any other type arrives as a WarmServiceError.
_ERRORS: dict[str, type[errors.PgRecallError]] = {
    cls.__name__: cls
    for cls in (
        errors.PgRecallError,
        errors.ConfigurationError,
        errors.DatabaseUnavailable,
        errors.ModelUnavailable,
        errors.InvalidInput,
        errors.EmbeddingSpaceMismatch,
        contract.NotFound,
        WarmServiceError,
    )
}


@dataclasses.dataclass(frozen=True)
class Found:
    """The answer to get_document: the document's JSON (pgrecall.api.read_queries.Document), None when there is none."""

    document: dict[str, Any] | None


def socket_path(settings: Settings) -> Path | None:
    """Where the service listens: PGRECALL_WARM_SOCKET, else PGRECALL_HOME/search.sock; None when it is off."""
    value = settings.warm_socket
    if value is None or value == "":
        return settings.home / SOCKET_NAME
    if value.strip().lower() in OFF:
        return None
    return Path(value).expanduser().absolute()


def answers_at(path: Path, timeout: float = 1.0) -> bool:
    """Whether a server accepts connections at `path` now."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(timeout)
        try:
            probe.connect(str(path))
        except OSError:
            return False
    return True


def answers(settings: Settings) -> bool:
    """Whether the warm search service runs (and the setting is on)."""
    path = socket_path(settings)
    return path is not None and answers_at(path)


def _json_default(value: Any) -> Any:
    if isinstance(value, datetime.date | datetime.time):  # datetime is a date
        return value.isoformat()
    if isinstance(value, set | frozenset):
        return sorted(value)
    raise TypeError(f"{type(value).__name__} is not JSON")


def encode(message: Any) -> bytes:
    """One protocol line: compact JSON (dates as ISO 8601) and a newline."""
    text = json.dumps(message, default=_json_default, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.encode("utf-8") + b"\n"


def error_answer(message: str, type_name: str = "WarmServiceError") -> dict[str, Any]:
    return {"ok": False, "error": message, "type": type_name}


def search_message(request: SearchRequest, settings: Settings) -> dict[str, Any]:
    # The fusion of the caller's PGRECALL_FUSION, not the service's: the same answer as in-process.
    fields = dataclasses.asdict(request)
    fields["fusion"] = request.fusion or settings.fusion
    return {"op": "search", "request": fields}


_HIT_TIMES = ("modified", "occurred_at")  # the Hit fields to_json() writes as ISO 8601


def hit_of(data: dict[str, Any]) -> Hit:
    """A Hit rebuilt from its to_json(): the same values, the same JSON again."""
    times = {name: datetime.datetime.fromisoformat(data[name]) if data.get(name) else None for name in _HIT_TIMES}
    return Hit(**{**data, **times})


def call(message: dict[str, Any], settings: Settings, timeout: float = DEFAULT_TIMEOUT_S) -> dict[str, Any] | None:
    """The service's answer to one message; None when no service answers at the socket.
    Raises the answer's error, WarmTimeout when it waits longer than `timeout` seconds for the
    service (per wait: connect, send, each read)."""
    path = socket_path(settings)
    if path is None:
        return None
    line = encode(message)
    if len(line) > MAX_REQUEST_BYTES:
        raise errors.InvalidInput(f"the request is longer than {MAX_REQUEST_BYTES} bytes")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        try:
            sock.connect(str(path))
        except TimeoutError:
            raise WarmTimeout(f"the warm search service at {path} did not accept within {timeout:g} s") from None
        except OSError:  # no file, nobody listening (a dead server's file), a path too long: no service
            return None
        try:
            sock.sendall(line)
            answer = _read_line(sock)
        except TimeoutError:
            raise WarmTimeout(f"the warm search service did not answer within {timeout:g} s") from None
        except (ConnectionResetError, BrokenPipeError):
            return None  # it went away (stopping): the caller answers in-process
    if not answer:
        return None
    try:
        reply = json.loads(answer)
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise WarmServiceError("the warm search service answered something that is not JSON") from None
    if not isinstance(reply, dict):
        raise WarmServiceError("the warm search service answered something that is not a JSON object")
    if not reply.get("ok"):
        raise _ERRORS.get(str(reply.get("type")), WarmServiceError)(str(reply.get("error") or "failed"))
    return reply


def _read_line(sock: socket.socket) -> bytes:
    """Bytes up to the first newline; b"" when the service closed the connection before one."""
    parts: list[bytes] = []
    size = 0
    while True:
        part = sock.recv(1 << 16)
        if not part:
            return b""
        end = part.find(b"\n")
        if end >= 0:
            parts.append(part[:end])
            return b"".join(parts)
        parts.append(part)
        size += len(part)
        if size > MAX_ANSWER_BYTES:
            raise WarmServiceError(f"the warm search service's answer is longer than {MAX_ANSWER_BYTES} bytes")


def search(request: SearchRequest, settings: Settings, timeout: float = DEFAULT_TIMEOUT_S) -> list[Hit] | None:
    """The hits of `request` as the service's Searcher.run gives them; None when no service runs."""
    reply = call(search_message(request, settings), settings, timeout)
    if reply is None:
        return None
    return [hit_of(hit) for hit in reply["hits"]]


def get_document(id_or_path: int | str, settings: Settings, timeout: float = DEFAULT_TIMEOUT_S) -> Found | None:
    """The document by id or path as the service's Searcher.get_document finds it; None when no service runs."""
    reply = call({"op": "get_document", "id_or_path": id_or_path}, settings, timeout)
    if reply is None:
        return None
    return Found(reply.get("document"))


def recent(
    request: RecentRequest, settings: Settings, timeout: float = DEFAULT_TIMEOUT_S
) -> list[dict[str, Any]] | None:
    """The documents of `request` as the service's Searcher.recent gives them (their to_json()); None when
    no service runs."""
    reply = call({"op": "recent", "request": dataclasses.asdict(request)}, settings, timeout)
    if reply is None:
        return None
    return list(reply["documents"])
