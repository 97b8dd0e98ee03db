"""Import of memories: an export's JSON Lines (pgrecall.memory.export), basic-memory notes, plain Markdown.

Importing an export is idempotent: an id already there with the same text is left alone, an id
there with another text is a conflict (left alone and named: the user decides), a new id is
written with its times and indexed.
Notes without an id (basic-memory's, a folder of Markdown files) are remembered: the same text
twice is still one memory.

basic-memory notes are Markdown with front matter (title, type, permalink, tags); their
observations and relations stay in the text, as written. The parsing is pure (`records_of`);
`import_records` writes through the memory service, under its locks.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Protocol

import structlog
import yaml

from pgrecall import contract
from pgrecall.errors import InvalidInput, PgRecallError, first_line
from pgrecall.front_matter import split_front_matter
from pgrecall.iso_time import parse_time
from pgrecall.memory import notes as memory_notes
from pgrecall.memory.notes import Memory
from pgrecall.memory.request import RememberRequest, remember_request
from pgrecall.worker.memory.files import MemoryFolder


class MemoryService(Protocol):
    """What an import needs of pgrecall.worker.memory.writer.MemoryService (which calls it)."""

    files: MemoryFolder

    async def remember(self, request: RememberRequest) -> Any: ...

    def locked_memory(self, memory_id: str) -> contextlib.AbstractAsyncContextManager[None]: ...

    async def index_memory(self, memory: Memory) -> bool: ...


_BASIC_MEMORY_KEYS = ("type", "permalink")
log = structlog.get_logger("pgrecall.memories")


@dataclasses.dataclass(frozen=True)
class Record:
    """One memory to import; `id` None: remembered (deduplicated by its text), with new times."""

    where: str  # file (and line) it came from, for the summary
    text: Any
    title: Any = None
    tags: Any = ()
    metadata: Any = None
    source: Any = "import"
    id: str | None = None
    created: str | None = None
    updated: str | None = None


@dataclasses.dataclass
class Summary:
    added: list[str] = dataclasses.field(default_factory=list)
    unchanged: list[str] = dataclasses.field(default_factory=list)  # already there with the same text
    conflicts: list[str] = dataclasses.field(default_factory=list)  # the id holds another text: left alone
    forgotten: list[str] = dataclasses.field(default_factory=list)  # the id is in the trash: restore it first
    failed: list[tuple[str, str]] = dataclasses.field(default_factory=list)  # (where, reason)

    def to_json(self) -> dict[str, Any]:
        return {
            "added": self.added,
            "unchanged": self.unchanged,
            "conflicts": self.conflicts,
            "forgotten": self.forgotten,
            "failed": [{"where": where, "error": error} for where, error in self.failed],
        }

    def line(self, source: str) -> str:
        parts = [f"{len(self.added)} added", f"{len(self.unchanged)} unchanged (already there with the same text)"]
        if self.conflicts:
            parts.append(f"{len(self.conflicts)} left alone: their id holds another text ({', '.join(self.conflicts)})")
        if self.forgotten:
            parts.append(f"{len(self.forgotten)} forgotten here: restore them first ({', '.join(self.forgotten)})")
        if self.failed:
            parts.append(f"{len(self.failed)} failed")
        return f"imported {source}: " + ", ".join(parts)


def records_of(path: Path) -> Iterator[Record | tuple[str, str]]:
    """What a file or folder holds as memories; a (where, reason) pair for what cannot be read."""
    if path.is_dir():
        for note in sorted(path.rglob("*.md")):
            relative = note.relative_to(path)
            if any(part.startswith(".") for part in relative.parts) or note.is_symlink() or not note.is_file():
                continue  # hidden (a trash, a history, a tool's folder) or a link: not a note of this folder
            yield from _markdown_record(note, relative.as_posix())
    elif path.suffix.lower() == ".md":
        yield from _markdown_record(path, path.name)
    else:
        yield from _json_lines(path)


def _json_lines(path: Path) -> Iterator[Record | tuple[str, str]]:
    try:
        content = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        yield (path.name, first_line(exc))
        return
    yield from json_line_records(content, path.name)


def json_line_records(content: str, name: str) -> Iterator[Record | tuple[str, str]]:
    """The memories of an export's text (`name`: what the summary calls it)."""
    for number, line in enumerate(content.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{name}:{number}"
        try:
            entry = json.loads(line)
        except json.JSONDecodeError as exc:
            yield (where, f"not JSON: {exc.msg}")
            continue
        if not isinstance(entry, dict) or "text" not in entry:
            yield (where, "not a memory: a JSON object with a text")
            continue
        metadata = entry.get("metadata")
        if entry.get("project") and isinstance(metadata, dict) and "project" not in metadata:
            metadata = {**metadata, "project": entry["project"]}
        yield Record(
            where=where,
            text=entry.get("text"),
            title=entry.get("title"),
            tags=entry.get("tags") or (),
            metadata=metadata,
            source=entry.get("source"),
            id=entry.get("id"),
            created=entry.get("created"),
            updated=entry.get("updated"),
        )


def _markdown_record(path: Path, where: str) -> Iterator[Record | tuple[str, str]]:
    try:
        content = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        yield (where, first_line(exc))
        return
    ours = memory_notes.parse(where, content)
    if ours is not None:  # a note of a pgrecall memory folder: its id and times come with it
        yield Record(
            where, ours.text, ours.title, ours.tags, ours.metadata, ours.source, ours.id, ours.created, ours.updated
        )
        return
    yield markdown_record(content, where)


def markdown_record(content: str, where: str) -> Record:
    """A basic-memory note or a plain Markdown file as a memory to remember (pure)."""
    try:
        front, body = split_front_matter(content)
    except (ValueError, yaml.YAMLError):
        front, body = {}, content
    front = front if isinstance(front, dict) else {}
    text = body.strip()
    title = front.get("title") if isinstance(front.get("title"), str) else None
    heading = text.split("\n", 1)[0]
    if heading.startswith("# ") and (title is None or heading[2:].strip() == title):
        title = heading[2:].strip()
        text = text[len(heading) :].strip()
    metadata = {
        key: value
        for key, value in front.items()
        if key in _BASIC_MEMORY_KEYS and isinstance(value, (str, int, float, bool)) and value != ""
    }
    return Record(
        where=where, text=text or (title or ""), title=title, tags=_tags(front.get("tags")), metadata=metadata
    )


def _tags(value: Any) -> tuple[str, ...]:
    """basic-memory writes tags as a list, or a string of them ("a, b" or "#a #b")."""
    if isinstance(value, str):
        value = value.replace(",", " ").split()
    if not isinstance(value, list):
        return ()
    return tuple(str(tag).lstrip("#").strip() for tag in value if str(tag).lstrip("#").strip())


def _time(value: Any) -> str | None:
    """An ISO 8601 time as the notes write it (UTC, seconds, Z); None when it is not one."""
    moment = parse_time(value)
    if moment is None:
        return None
    moment = moment.astimezone(datetime.UTC).replace(microsecond=0)
    return moment.isoformat().replace("+00:00", "Z")


async def import_records(service: MemoryService, items: Iterable[Record | tuple[str, str]]) -> Summary:
    summary = Summary()
    for item in items:
        if isinstance(item, tuple):
            summary.failed.append(item)
            continue
        try:
            await _import_one(service, item, summary)
        except (PgRecallError, OSError) as exc:
            summary.failed.append((item.where, first_line(exc)))
    log.info(
        "memories_imported",
        added=len(summary.added),
        unchanged=len(summary.unchanged),
        conflicts=len(summary.conflicts),
        forgotten=len(summary.forgotten),
        failed=len(summary.failed),
    )
    return summary


async def _import_one(service: MemoryService, record: Record, summary: Summary) -> None:
    import asyncio

    from pgrecall.worker.memory import files as memories

    if record.id is None:
        # force: the user brings these notes in on purpose (the exact-text dedupe still holds); a
        # secret is still refused, listed under failed with its kind and place.
        saved = await service.remember(
            remember_request(
                record.text,
                title=record.title,
                tags=record.tags,
                metadata=record.metadata,
                source=record.source,
                force=True,
            )
        )
        (summary.added if saved.created else summary.unchanged).append(saved.memory.id)
        return
    if not isinstance(record.id, str) or not contract.MEMORY_ID.fullmatch(record.id):
        raise InvalidInput(f"id {str(record.id)[:40]!r} is not a memory id (12 hexadecimal digits)")
    text = contract.memory_text(record.text)
    title = contract.memory_title(record.title)
    tags = contract.memory_tags(record.tags)
    metadata = contract.memory_metadata(record.metadata)
    source = contract.memory_source(record.source)
    memory_id = record.id
    async with service.locked_memory(memory_id):
        current = await asyncio.to_thread(service.files.read, memory_id)
        if current is not None:
            (summary.unchanged if current.text == text else summary.conflicts).append(memory_id)
            return
        if await asyncio.to_thread(service.files.locate, memory_id, True) is not None:
            summary.forgotten.append(memory_id)
            return
        same, _ = await asyncio.to_thread(service.files.same_text, text)
        if same is not None:  # remembered here under another id: one memory per text
            summary.unchanged.append(same.id)
            return
        created = _time(record.created) or memories.now_utc()
        memory = Memory(
            id=memory_id,
            path=memories.relative_path(memory_id, created, title, text),
            title=title,
            text=text,
            tags=tags,
            source=source,
            metadata=metadata,
            created=created,
            updated=_time(record.updated) or created,
        )
        await asyncio.to_thread(service.files.write, memory, "remember")
        await service.index_memory(memory)
    summary.added.append(memory_id)


async def import_path(service: MemoryService, path: Path) -> Summary:
    if not path.exists():
        raise InvalidInput(f"nothing to import at {path}: give a JSON Lines file, a Markdown file or a folder")
    return await import_records(service, records_of(path))
