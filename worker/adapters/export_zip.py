"""A data export as downloaded: a .zip read in place, entry by entry, never unpacked to disk.

claude.ai's export (`conversations-000.zip`, sometimes several shards) holds
conversations.json, projects.json and users.json; ChatGPT's holds a conversations.json
too. Each of those entries is decompressed from the open file and parsed as a stream
(ijson), one conversation or project at a time, so a conversations.json of hundreds of
MB is never held whole. What the zip says of itself is checked before anything is read:
entry names (absolute, or with `..`), the uncompressed total (`max_bytes`) and each
entry's compression ratio; the bytes actually decompressed are counted as well.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import lzma
import re
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import PurePosixPath
from typing import IO, Any

import ijson

from pgrecall import kinds
from pgrecall.errors import UnsupportedFile
from pgrecall.worker.adapters import chatgpt, claude
from pgrecall.worker.document import ParsedDocument

CONVERSATIONS = "conversations.json"
PROJECTS = "projects.json"
# Text and JSON seldom deflate beyond tens of times; a bomb expands hundreds to millions of times.
MAX_COMPRESSION_RATIO = 200
# Below this, a high ratio is no threat (a few KB of blank space compresses 1000 times).
RATIO_EXEMPT_BYTES = 1024 * 1024
_DRIVE = re.compile(r"^[A-Za-z]:")
# What a broken zip or entry raises while it is read: a bad header or CRC, a truncated
# stream, an unknown compression method, an encrypted entry (RuntimeError), bzip2's OSError.
_CORRUPT = (zipfile.BadZipFile, zlib.error, lzma.LZMAError, EOFError, NotImplementedError, RuntimeError, OSError)


class Refused(ValueError):
    """The zip is not read; the message says why."""


def unsafe_name(name: str) -> bool:
    """An entry name that, unpacked, would land outside the folder: absolute, a drive, or with `..`."""
    return name.startswith(("/", "\\")) or bool(_DRIVE.match(name)) or ".." in re.split(r"[/\\]", name)


@dataclasses.dataclass
class _Budget:
    """Uncompressed bytes the export may still read."""

    left: int
    limit: int

    def take(self, count: int) -> None:
        self.left -= count
        if self.left < 0:
            raise Refused(f"zip unpacks to more than PGRECALL_MAX_EXPORT_BYTES ({self.limit} bytes)")


class _Counted:
    """An entry's stream that charges what it yields to the budget (the sizes in the zip can lie)."""

    def __init__(self, stream: IO[bytes], budget: _Budget):
        self.stream = stream
        self.budget = budget

    def read(self, size: int = -1) -> bytes:
        data = self.stream.read(size)
        self.budget.take(len(data))
        return data


def _check(infos: list[zipfile.ZipInfo], read: list[zipfile.ZipInfo], limit: int) -> None:
    """Every name is safe; the entries to `read` are within the limit and no bomb (by what they declare)."""
    for info in infos:
        if unsafe_name(info.filename):
            raise Refused(f"unsafe entry name {info.filename[:200]!r} (absolute or with '..')")
    total = sum(info.file_size for info in read)
    if total > limit:
        raise Refused(f"zip unpacks to {total} bytes, over PGRECALL_MAX_EXPORT_BYTES ({limit})")
    for info in read:
        if info.file_size > RATIO_EXEMPT_BYTES and info.file_size > MAX_COMPRESSION_RATIO * max(info.compress_size, 1):
            ratio = info.file_size // max(info.compress_size, 1)
            raise Refused(f"zip bomb: {info.filename[:200]!r} expands {ratio} times (at most {MAX_COMPRESSION_RATIO})")


def _items(archive: zipfile.ZipFile, info: zipfile.ZipInfo, key: str, budget: _Budget) -> Iterator[Any]:
    """The elements of the entry's top-level array, or of its `key` array in an object (older exports)."""
    with archive.open(info) as stream:
        first = next(ijson.parse(_Counted(stream, budget)), None)
    event = first[1] if first else None
    if event not in ("start_array", "start_map"):
        raise UnsupportedFile(f"zip whose {info.filename[:200]} is not a Claude or ChatGPT export")
    prefix = "item" if event == "start_array" else f"{key}.item"
    with archive.open(info) as stream:
        yield from ijson.items(_Counted(stream, budget), prefix, use_float=True)


def _entries(infos: list[zipfile.ZipInfo], name: str) -> list[zipfile.ZipInfo]:
    return [i for i in infos if not i.is_dir() and PurePosixPath(i.filename.replace("\\", "/")).name.lower() == name]


def _linked(document: ParsedDocument, project_names: dict[str, str]) -> ParsedDocument:
    """A conversation of a project gets the project's name; its hash covers the name, so a renamed project updates it."""
    name = project_names.get(document.metadata.get("project_uuid") or "")
    if name is None:
        return document
    digest = hashlib.sha256(f"{document.content_hash}\0{name}".encode("utf-8", "surrogatepass")).hexdigest()
    return dataclasses.replace(
        document, content_hash=digest, metadata={**document.metadata, "project": name}, project=name or None
    )


def _survey(archive: zipfile.ZipFile, max_bytes: int) -> tuple[list[zipfile.ZipInfo], list[zipfile.ZipInfo]]:
    """The projects.json and conversations.json entries, from the zip's directory alone."""
    infos = archive.infolist()
    project_entries, conversation_entries = _entries(infos, PROJECTS), _entries(infos, CONVERSATIONS)
    if not project_entries and not conversation_entries:
        raise UnsupportedFile(
            "zip file that is not a Claude or ChatGPT export (no conversations.json or projects.json)"
        )
    _check(infos, project_entries + conversation_entries, max_bytes)
    return project_entries, conversation_entries


def _read(path: str, archive: zipfile.ZipFile, max_bytes: int) -> tuple[str, list[ParsedDocument]]:
    project_entries, conversation_entries = _survey(archive, max_bytes)
    budget = _Budget(max_bytes, max_bytes)
    documents: dict[str, ParsedDocument] = {}  # an id listed twice, or in two entries: the later wins
    for info in project_entries:
        for project in _items(archive, info, "projects", budget):
            document = claude.parse_project(path, project)
            documents[document.path] = document
    project_names = {d.metadata["project_uuid"]: d.title for d in documents.values()}
    kind = kinds.CLAUDE_EXPORT
    chatgpt_format: bool | None = None  # decided by the first conversation
    for info in conversation_entries:
        for conversation in _items(archive, info, "conversations", budget):
            if chatgpt_format is None:
                chatgpt_format = chatgpt.looks_like_chatgpt_export([conversation])
                if not chatgpt_format and not claude.looks_like_export([conversation]):
                    raise UnsupportedFile(f"zip whose {info.filename[:200]} is not a Claude or ChatGPT export")
                kind = kinds.CHATGPT_EXPORT if chatgpt_format else kinds.CLAUDE_EXPORT
            if not isinstance(conversation, dict):
                raise ValueError("a conversation is not an object")
            if chatgpt_format:
                document = chatgpt.parse_conversation(path, conversation)
            else:
                document = _linked(claude.parse_conversation(path, conversation), project_names)
            documents[document.path] = document
    return kind, list(documents.values())


@contextlib.contextmanager
def _refusing() -> Iterator[None]:
    """A broken zip or JSON entry as Refused, with the reason."""
    try:
        yield
    except RecursionError:
        raise
    except ijson.JSONError as exc:
        raise Refused(f"invalid JSON in the zip: {_line(exc)}") from None
    except _CORRUPT as exc:
        raise Refused(f"corrupt zip: {_line(exc)}") from None


def check(file: IO[bytes], *, max_bytes: int) -> None:
    """What the zip open as `file` says of itself, read from its directory without
    inflating anything: raises as read() would for a zip that is corrupt, hostile, too
    large or no export. Cheap even for a zip of gigabytes, so a foreign one is not hashed."""
    with _refusing(), zipfile.ZipFile(file) as archive:
        _survey(archive, max_bytes)


def read(path: str, file: IO[bytes], *, max_bytes: int) -> tuple[str, list[ParsedDocument]]:
    """The export's kind and documents from the zip open as `file` (seekable), at `path`.
    Raises Refused (corrupt, hostile or too large), UnsupportedFile (not an export) or
    ValueError (a conversation that cannot be read)."""
    with _refusing(), zipfile.ZipFile(file) as archive:
        return _read(path, archive, max_bytes)


def _line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
