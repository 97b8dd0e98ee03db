"""Memories as files: Markdown notes in a folder that pgrecall owns.

The files are the source of truth. A memory survives any rebuild of the index,
and the user can read, edit, grep, sync and version it like any other note;
it reaches the index through the same pipeline as every other file.

A note is written atomically (a private temporary file, fsync, rename, fsync
of the folder) as `YYYY/MM/<date>-<slug>-<id>.md`, readable by its owner only,
in folders only its owner may enter. Only notes found by their id inside the
memory folder can be changed or removed: an id is 12 hexadecimal digits, so
nothing an assistant passes can name a path (see pgrecall.contract).
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import os
import re
import secrets
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from pgrecall.contract import MEMORY_ID, RESERVED_METADATA_KEYS
from pgrecall.worker.adapters.markdown import split_front_matter

FOLDER_MODE = 0o700
FILE_MODE = 0o600
_NOTE_NAME = re.compile(r"\d{4}-\d{2}-\d{2}-[a-z0-9-]*?-?([0-9a-f]{12})\.md")
_SLUG_WORDS = 8
_SLUG_CHARS = 48


@dataclasses.dataclass(frozen=True)
class Memory:
    id: str
    path: str  # relative to the memory folder
    title: str | None
    text: str
    tags: tuple[str, ...]
    source: str | None
    metadata: dict[str, Any]
    created: str  # ISO 8601, UTC
    updated: str

    @property
    def content_sha256(self) -> str:
        return content_digest(self.text)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "path": self.path,
            "title": self.title,
            "text": self.text,
            "tags": list(self.tags),
            "source": self.source,
            "metadata": dict(self.metadata),
            "created": self.created,
            "updated": self.updated,
        }


def content_digest(text: str) -> str:
    """What makes two memories the same: their text (already normalised by the contract)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def now_utc() -> str:
    return datetime.datetime.now(datetime.UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def new_id() -> str:
    return secrets.token_hex(6)


def slug(text: str) -> str:
    """A few lowercase ASCII words of the title or text, for a readable file name."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii").lower()
    words = re.findall(r"[a-z0-9]+", ascii_text)[:_SLUG_WORDS]
    return "-".join(words)[:_SLUG_CHARS].strip("-") or "memory"


def relative_path(memory_id: str, created: str, title: str | None, text: str) -> str:
    day = created[:10]
    return f"{day[:4]}/{day[5:7]}/{day}-{slug(title or text)}-{memory_id}.md"


def render(memory: Memory) -> str:
    front: dict[str, Any] = {
        "id": memory.id,
        "created": memory.created,
        "updated": memory.updated,
    }
    if memory.title:
        front["title"] = memory.title
    front["tags"] = list(memory.tags)
    if memory.source:
        front["source"] = memory.source
    front["content_sha256"] = memory.content_sha256
    front.update(memory.metadata)
    header = yaml.safe_dump(front, sort_keys=False, allow_unicode=True, default_flow_style=None, width=1000)
    body = f"# {memory.title}\n\n{memory.text}\n" if memory.title else f"{memory.text}\n"
    return f"---\n{header}---\n\n{body}"


def parse(relative: str, content: str) -> Memory | None:
    """The memory a note holds; None when it is not one of ours (no id in its front matter)."""
    try:
        front, body = split_front_matter(content)
    except ValueError:
        return None
    memory_id = front.get("id")
    if not isinstance(memory_id, str) or not MEMORY_ID.fullmatch(memory_id):
        return None
    title = front.get("title") if isinstance(front.get("title"), str) else None
    text = body.strip()
    if title and text.startswith(f"# {title}"):
        text = text[len(f"# {title}") :].strip()
    tags = front.get("tags") or []
    return Memory(
        id=memory_id,
        path=relative,
        title=title,
        text=text,
        tags=tuple(str(tag) for tag in tags) if isinstance(tags, list) else (),
        source=front.get("source") if isinstance(front.get("source"), str) else None,
        metadata={key: value for key, value in front.items() if key not in RESERVED_METADATA_KEYS},
        created=str(front.get("created") or ""),
        updated=str(front.get("updated") or front.get("created") or ""),
    )


class MemoryFolder:
    """The memory folder's files; no database here."""

    def __init__(self, folder: Path):
        self.folder = folder

    def ensure(self) -> Path:
        """Create the folder (private) if needed; return its resolved path."""
        if not self.folder.exists():
            self.folder.parent.mkdir(parents=True, exist_ok=True)
            _private_folder(self.folder)
        return self.folder.resolve()

    def locate(self, memory_id: str) -> Path | None:
        """The note of this id: a regular file inside the folder, never through a link."""
        root = self.folder.resolve()
        if not root.is_dir():
            return None
        for candidate in sorted(root.glob(f"[0-9][0-9][0-9][0-9]/[0-9][0-9]/*-{memory_id}.md")):
            if _is_ours(root, candidate):
                return candidate
        return None

    def read(self, memory_id: str) -> Memory | None:
        path = self.locate(memory_id)
        if path is None:
            return None
        memory = parse(self.relative(path), path.read_text(encoding="utf-8", errors="replace"))
        return memory if memory is not None and memory.id == memory_id else None

    def relative(self, path: Path) -> str:
        return path.relative_to(self.folder.resolve()).as_posix()

    def write(self, memory: Memory) -> Path:
        """Write the note atomically and privately; returns its path."""
        root = self.ensure()
        target = root / memory.path
        parent = target.parent
        _private_folder(parent.parent)
        _private_folder(parent)
        if not _is_inside(root, parent) or parent.is_symlink():
            raise OSError(f"refusing to write outside the memory folder: {memory.path}")
        temporary = parent / f".{target.name}.{secrets.token_hex(4)}.tmp"  # hidden: never indexed
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, FILE_MODE)
        try:
            with os.fdopen(descriptor, "w", encoding="utf-8") as file:
                file.write(render(memory))
                file.flush()
                os.fsync(file.fileno())
            os.replace(temporary, target)
        except BaseException:
            temporary.unlink(missing_ok=True)
            raise
        _fsync_folder(parent)
        return target

    def delete(self, memory_id: str) -> Memory | None:
        path = self.locate(memory_id)
        if path is None:
            return None
        memory = parse(self.relative(path), path.read_text(encoding="utf-8", errors="replace"))
        path.unlink()
        _fsync_folder(path.parent)
        return memory

    def memories(self) -> Iterator[Memory]:
        root = self.folder.resolve()
        if not root.is_dir():
            return
        for path in sorted(root.glob("[0-9][0-9][0-9][0-9]/[0-9][0-9]/*.md")):
            if not _is_ours(root, path):
                continue
            memory = parse(self.relative(path), path.read_text(encoding="utf-8", errors="replace"))
            if memory is not None:
                yield memory


def _private_folder(folder: Path) -> None:
    """Create `folder` (its parent exists) for its owner only, whatever the umask."""
    try:
        folder.mkdir(mode=FOLDER_MODE)
    except FileExistsError:
        return
    folder.chmod(FOLDER_MODE)


def _is_inside(root: Path, path: Path) -> bool:
    return path.resolve().is_relative_to(root)


def _is_ours(root: Path, path: Path) -> bool:
    return (
        _NOTE_NAME.fullmatch(path.name) is not None
        and not path.is_symlink()
        and not path.parent.is_symlink()
        and not path.parent.parent.is_symlink()
        and path.is_file()
        and _is_inside(root, path)
    )


def _fsync_folder(folder: Path) -> None:
    descriptor = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def select(
    memories: Iterator[Memory], since: str | None = None, tags: tuple[str, ...] = (), limit: int = 50
) -> list[Memory]:
    """Newest first: those updated since `since` (ISO date or time) that carry every tag in `tags`."""
    chosen = [
        memory
        for memory in memories
        if (since is None or memory.updated >= since) and all(tag in memory.tags for tag in tags)
    ]
    chosen.sort(key=lambda memory: (memory.updated, memory.id), reverse=True)
    return chosen[:limit]
