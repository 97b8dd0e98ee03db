"""Memory notes, read: the note format (a Markdown note with YAML front matter) and the folder's notes, listed.

Both sides import it: the memory write path (pgrecall.worker.memories writes and
deletes notes in this format) and the read-only side, which lists memories
without a database. Nothing here writes a file.

A note is `YYYY/MM/<date>-<slug>-<id>.md` in the memory folder. Only regular
files found there by that name are read, never through a link: an id is 12
hexadecimal digits, so nothing an assistant passes can name a path (see
pgrecall.contract).
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
import unicodedata
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import yaml

from pgrecall import contract
from pgrecall.contract import MEMORY_ID, RESERVED_METADATA_KEYS
from pgrecall.front_matter import split_front_matter
from pgrecall.settings import Settings, load_settings

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


class MemoryNotes:
    """The notes of a memory folder, read; pgrecall.worker.memories.MemoryFolder writes them."""

    def __init__(self, folder: Path):
        self.folder = folder

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


def is_inside(root: Path, path: Path) -> bool:
    return path.resolve().is_relative_to(root)


def _is_ours(root: Path, path: Path) -> bool:
    return (
        _NOTE_NAME.fullmatch(path.name) is not None
        and not path.is_symlink()
        and not path.parent.is_symlink()
        and not path.parent.parent.is_symlink()
        and path.is_file()
        and is_inside(root, path)
    )


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


def folder_of(settings: Settings) -> Path:
    """The memory folder: `[memory] folder` of the config file, else memories/ in PGRECALL_HOME."""
    from pgrecall import roots

    return roots.memory_folder(settings.config_file, settings.home)


def read_memories(folder: Path, since: Any = None, tags: Any = None, limit: Any = 50) -> list[Memory]:
    """The memories of `folder`, chosen as list_memories says, validated as every interface does."""
    return select(
        MemoryNotes(folder).memories(),
        since=contract.memory_since(since),
        tags=contract.memory_tags(tags),
        limit=contract.list_limit(limit),
    )


def list_memories(since: Any = None, tags: Iterable[str] | None = None, limit: int = 50) -> list[Memory]:
    """Memories newest first (by update), updated since `since` (ISO date or time) and carrying
    every tag in `tags`. Reads the folder only: no database is needed."""
    return read_memories(folder_of(load_settings()), since=since, tags=tags, limit=limit)
