"""Parsers, one per kind of file: bytes in, ParsedDocuments out, no I/O."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import re
from collections.abc import Iterable
from pathlib import PurePosixPath
from typing import IO, Any

from pgrecall import kinds
from pgrecall.errors import PgRecallError, UnsupportedFile
from pgrecall.settings import default
from pgrecall.worker.adapters import chatgpt, claude, claude_code, export_zip, markdown, text
from pgrecall.worker.document import ParsedDocument, Section


class ParseError(PgRecallError):
    """The file could not be parsed."""


# The one map from a file's suffix to its kind: what is read, and by which adapter.
KIND_BY_SUFFIX = {
    ".md": kinds.MARKDOWN,
    ".markdown": kinds.MARKDOWN,
    ".txt": kinds.TEXT,
    # Before reading, a .json file is taken for a Claude export; its content tells
    # whether it is one or a ChatGPT export (Parsed.kind).
    ".json": kinds.CLAUDE_EXPORT,
    # Claude Code sessions, by content: a .jsonl file of another kind is skipped with a reason.
    ".jsonl": kinds.CLAUDE_CODE_SESSION,
    # A data export as downloaded (claude.ai's or ChatGPT's), read in place: see is_archive.
    ".zip": kinds.CLAUDE_EXPORT,
}
# Kinds of file that hold documents of their own, each stored as a child row of the file's row.
CONTAINER_KINDS = frozenset({kinds.CLAUDE_EXPORT, kinds.CHATGPT_EXPORT})


@dataclasses.dataclass(frozen=True)
class Parsed:
    """What a file turned out to hold."""

    # The file's kind: as kind_of(path) named it before reading, except that a .json
    # export is the kind of export its content turned out to be.
    kind: str
    documents: list[ParsedDocument]
    # The file holds several documents (an export's conversations), each at
    # "<path>#<id>", under a row of the file's own; otherwise documents is the
    # file itself, as one document at its path.
    container: bool


def content_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def kind_of(path: str) -> str:
    """The kind of file at `path`, from its suffix alone: kinds.UNSUPPORTED for a type no adapter reads."""
    return KIND_BY_SUFFIX.get(PurePosixPath(path).suffix.lower(), kinds.UNSUPPORTED)


def is_supported(path: str) -> bool:
    return kind_of(path) != kinds.UNSUPPORTED


def is_archive(path: str) -> bool:
    """A zip export: read from the open file by parse_archive, never whole into memory."""
    return PurePosixPath(path).suffix.lower() == ".zip"


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


def _clean_section(section: Section) -> Section:
    context = clean_text(section.text[: section.context])
    return Section(clean_text(section.heading), context + clean_text(section.text[section.context :]), len(context))


def clean_document(document: ParsedDocument) -> ParsedDocument:
    title = clean_text(document.title)
    return dataclasses.replace(
        document,
        path=clean_text(document.path),
        title=title if len(title) <= MAX_TITLE_CHARS else title[: MAX_TITLE_CHARS - 1] + "…",
        sections=[_clean_section(section) for section in document.sections],
        metadata=_clean_value(document.metadata),
        project=clean_text(document.project) if document.project else None,
    )


def unsupported_reason(path: str) -> str:
    suffix = PurePosixPath(path).suffix.lower()
    return f"unsupported file type {suffix or '(no extension)'!r}"


def _by_path(documents: Iterable[ParsedDocument]) -> list[ParsedDocument]:
    """An id listed twice in an export: the later entry wins."""
    return list({document.path: document for document in documents}.values())


def _read_export(path: str, decoded: str) -> tuple[str, list[ParsedDocument]]:
    """A conversation export, Claude's or ChatGPT's, told apart by its content (read once)."""
    try:
        value = json.loads(decoded)
    except json.JSONDecodeError as exc:
        raise ValueError(f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    value = claude.unwrap(value)
    if chatgpt.looks_like_chatgpt_export(value):
        return kinds.CHATGPT_EXPORT, _by_path(chatgpt.parse_conversation(path, c) for c in value)
    if claude.looks_like_export(value):
        return kinds.CLAUDE_EXPORT, _by_path(claude.parse_conversation(path, c) for c in value)
    raise UnsupportedFile("JSON file that is not a Claude or ChatGPT conversation export")


def _read(
    kind: str, path: str, decoded: str, digest: str, include_tool_results: bool
) -> tuple[str, list[ParsedDocument]]:
    if kind == kinds.MARKDOWN:
        return kind, [markdown.parse(path, decoded, digest)]
    if kind == kinds.TEXT:
        return kind, [text.parse(path, decoded, digest)]
    if kind == kinds.CLAUDE_EXPORT:
        return _read_export(path, decoded)
    if kind == kinds.CLAUDE_CODE_SESSION:
        return kind, [claude_code.parse_session(path, decoded, digest, include_tool_results=include_tool_results)]
    raise UnsupportedFile(unsupported_reason(path))


def check_archive(file: IO[bytes], *, max_bytes: int = default("max_export_bytes")) -> None:
    """Raises UnsupportedFile or ParseError for a zip that parse_archive would refuse, from its
    directory alone (nothing inflated); the file is left where it was."""
    position = file.tell()
    try:
        export_zip.check(file, max_bytes=max_bytes)
    except export_zip.Refused as exc:
        raise ParseError(str(exc)) from None
    finally:
        file.seek(position)


def parse_archive(path: str, file: IO[bytes], *, max_bytes: int = default("max_export_bytes")) -> Parsed:
    """Parse the zip export open as `file` (seekable), reading at most `max_bytes` out of it.
    Raises UnsupportedFile or ParseError."""
    try:
        kind, documents = export_zip.read(path, file, max_bytes=max_bytes)
    except export_zip.Refused as exc:
        raise ParseError(str(exc)) from None
    except RecursionError:
        raise ParseError("nested too deeply") from None
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise ParseError(f"{type(exc).__name__}: {exc}".splitlines()[0][:300]) from exc
    return Parsed(kind, [clean_document(document) for document in documents], True)


def parse(path: str, data: bytes, *, include_tool_results: bool = False) -> Parsed:
    """Parse the file at `path` (relative to its root). Raises UnsupportedFile or ParseError.
    `include_tool_results`: a Claude Code session's tool results are indexed too."""
    kind = kind_of(path)
    if kind == kinds.UNSUPPORTED:
        raise UnsupportedFile(unsupported_reason(path))
    if is_archive(path):
        return parse_archive(path, io.BytesIO(data))
    decoded = decode_text(data)
    try:
        kind, documents = _read(kind, path, decoded, content_hash(data), include_tool_results)
    except RecursionError:
        raise ParseError("nested too deeply") from None
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise ParseError(f"{type(exc).__name__}: {exc}".splitlines()[0][:300]) from exc
    return Parsed(kind, [clean_document(document) for document in documents], kind in CONTAINER_KINDS)
