"""Parsers, one per kind of file: bytes in, ParsedDocuments out, no I/O."""

from __future__ import annotations

import dataclasses
import hashlib
import re
from pathlib import PurePosixPath
from typing import Any

from pgrecall.errors import PgRecallError, UnsupportedFile
from pgrecall.worker.adapters import claude, markdown, text
from pgrecall.worker.document import ParsedDocument, Section


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


BINARY_PROBE_BYTES = 8192
MAX_TITLE_CHARS = 500
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def decode_text(data: bytes) -> str:
    """UTF-8 (a BOM is dropped), or UTF-16 with its BOM. A NUL in the first 8 KiB
    (git's test) makes the file binary; NULs further on, as a crash can leave at
    the end of a note, are removed so the text is indexed (PostgreSQL text holds no NUL)."""
    if data.startswith(_UTF16_BOMS):
        try:
            text_value = data.decode("utf-16")
        except UnicodeDecodeError as exc:
            raise ParseError(f"not valid UTF-16 (byte {exc.start})") from None
        if "\x00" in text_value[:BINARY_PROBE_BYTES]:
            raise UnsupportedFile("binary file (contains NUL bytes)")
    else:
        if b"\x00" in data[:BINARY_PROBE_BYTES]:
            raise UnsupportedFile("binary file (contains NUL bytes)")
        try:
            text_value = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ParseError(f"not valid UTF-8 (byte {exc.start}: {data[exc.start : exc.start + 1]!r})") from None
    return text_value.removeprefix("\ufeff").replace("\x00", "")


def clean_text(value: str) -> str:
    """What PostgreSQL text and jsonb can hold: no NUL, no lone surrogate (JSON's "\\ud800")."""
    if "\x00" in value:
        value = value.replace("\x00", "")
    if _LONE_SURROGATE.search(value):
        value = _LONE_SURROGATE.sub("\ufffd", value)
    return value


def _clean_value(value: Any) -> Any:
    """Metadata, already bounded in depth by the adapters."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        return {clean_text(str(k)): _clean_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean_value(v) for v in value]
    return value


def clean_document(document: ParsedDocument) -> ParsedDocument:
    title = clean_text(document.title)
    return dataclasses.replace(
        document,
        path=clean_text(document.path),
        title=title if len(title) <= MAX_TITLE_CHARS else title[: MAX_TITLE_CHARS - 1] + "…",
        sections=[Section(clean_text(s.heading), clean_text(s.text)) for s in document.sections],
        metadata=_clean_value(document.metadata),
    )


def unsupported_reason(path: str) -> str:
    suffix = PurePosixPath(path).suffix.lower()
    return f"unsupported file type {suffix or '(no extension)'!r}"


def parse(path: str, data: bytes) -> list[ParsedDocument]:
    """Parse the file at `path` (relative to its root). Raises UnsupportedFile or ParseError."""
    suffix = PurePosixPath(path).suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES:
        raise UnsupportedFile(unsupported_reason(path))
    decoded = decode_text(data)
    digest = content_hash(data)
    try:
        if suffix in MARKDOWN_SUFFIXES:
            documents = [markdown.parse(path, decoded, digest)]
        elif suffix in TEXT_SUFFIXES:
            documents = [text.parse(path, decoded, digest)]
        else:
            documents = claude.parse_export(path, decoded)
    except RecursionError:
        raise ParseError("nested too deeply") from None
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise ParseError(f"{type(exc).__name__}: {exc}".splitlines()[0][:300]) from exc
    return [clean_document(document) for document in documents]
