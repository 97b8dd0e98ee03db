"""Parsers, one per kind of file: bytes in, ParsedDocuments out, no I/O."""

from __future__ import annotations

import hashlib
from pathlib import PurePosixPath

from pgrecall.errors import PgRecallError, UnsupportedFile
from pgrecall.worker.adapters import claude, markdown, text
from pgrecall.worker.document import ParsedDocument


class ParseError(PgRecallError):
    """The file could not be parsed."""


MARKDOWN_SUFFIXES = {".md", ".markdown"}
TEXT_SUFFIXES = {".txt"}
JSON_SUFFIXES = {".json"}
SUPPORTED_SUFFIXES = MARKDOWN_SUFFIXES | TEXT_SUFFIXES | JSON_SUFFIXES


def content_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def is_supported(path: str) -> bool:
    return PurePosixPath(path).suffix.lower() in SUPPORTED_SUFFIXES


def decode_text(data: bytes) -> str:
    if b"\x00" in data[:8192]:
        raise UnsupportedFile("binary file (contains NUL bytes)")
    try:
        text_value = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ParseError(f"not valid UTF-8 (byte {exc.start}: {data[exc.start : exc.start + 1]!r})") from None
    return text_value.removeprefix("\ufeff")


def parse(path: str, data: bytes) -> list[ParsedDocument]:
    """Parse the file at `path` (relative to its root). Raises UnsupportedFile or ParseError."""
    suffix = PurePosixPath(path).suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES:
        raise UnsupportedFile(f"unsupported file type {suffix or '(no extension)'!r}")
    decoded = decode_text(data)
    digest = content_hash(data)
    try:
        if suffix in MARKDOWN_SUFFIXES:
            return [markdown.parse(path, decoded, digest)]
        if suffix in TEXT_SUFFIXES:
            return [text.parse(path, decoded, digest)]
        return claude.parse_export(path, decoded)
    except (ValueError, TypeError, KeyError) as exc:
        raise ParseError(f"{type(exc).__name__}: {exc}".splitlines()[0]) from exc
