"""Memory notes, read: the note format (a Markdown note with YAML front matter) and the folder's notes, listed.

Both sides import it: the memory write path (pgrecall.worker.memory.files writes and
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
from pgrecall.errors import PgRecallError
from pgrecall.front_matter import split_front_matter
from pgrecall.settings import Settings, load_settings

TRASH = ".trash"  # forgotten notes: hidden, so never scanned nor indexed; same YYYY/MM/ layout inside
NOTE_NAME = re.compile(r"\d{4}-\d{2}-\d{2}-[a-z0-9-]*?-?([0-9a-f]{12})\.md")
_SLUG_WORDS = 8
_SLUG_CHARS = 48


class MemoryNotFound(contract.NotFound):
    """No such memory."""


class MemoryUnreadable(PgRecallError):
    """A memory's note cannot be read (its permissions?)."""


class MemoryFolderIsALink(PgRecallError):
    """The memory folder is a symbolic link: pgrecall keeps memories in a real folder only."""


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

    forgotten: str | None = None  # in the trash since then (ISO 8601, UTC)

    @property
    def content_sha256(self) -> str:
        return content_digest(self.text)

    @property
    def shown_title(self) -> str:
        """Its title, or for a memory without one the first words of its text (never its file name)."""
        return self.title or title_from_text(self.text)

    @property
    def version(self) -> str:
        """What update and forget compare with `expect`: a digest of the note as it is written, so
        that any change (by pgrecall or a hand edit) gives another version, even within one second."""
        return hashlib.sha256(render(self).encode("utf-8")).hexdigest()[:16]

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
            "version": self.version,
            "forgotten": self.forgotten,
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


def renamed_path(path: str, memory_id: str, created: str, title: str | None, text: str) -> str:
    """The note's path once its title or text changed: the same folder, the name made from them now."""
    folder = path.rpartition("/")[0]
    name = relative_path(memory_id, created, title, text).rpartition("/")[2]
    return f"{folder}/{name}" if folder else name


_TITLE_CHARS = 120  # as the hooks cut a title
_FIRST_SENTENCE = re.compile(r"(.+?[.!?])(?:\s|$)")
_MARKUP = re.compile(r"^[#>*\-\s]+|[*_`]+")


def title_from_text(text: str) -> str:
    """What a memory without a title is shown as: its first sentence (of its first line), at most
    120 characters, cut at a word."""
    first_line = next((line for line in text.splitlines() if line.strip()), "")
    plain = " ".join(_MARKUP.sub("", first_line).split())
    sentence = _FIRST_SENTENCE.match(plain)
    shown = sentence.group(1) if sentence else plain
    if len(shown) > _TITLE_CHARS:
        shown = shown[: _TITLE_CHARS - 1].rsplit(" ", 1)[0].rstrip(" ,;:") + "…"
    return shown or "Memory"


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
    """The notes of a memory folder, read; pgrecall.worker.memory.files.MemoryFolder writes them.

    A note that cannot be read (mode 000) is never a traceback: `read` raises MemoryUnreadable
    (one line), `memories` skips it and lists it in `unreadable`.
    """

    def __init__(self, folder: Path):
        self.folder = folder
        self.unreadable: list[str] = []  # relative paths the last memories() could not read

    def root(self) -> Path:
        """The folder, resolved; MemoryFolderIsALink when the folder itself is a symbolic link."""
        if self.folder.is_symlink():
            raise MemoryFolderIsALink(
                f"the memory folder {self.folder} is a symbolic link (to {self.folder.resolve()}); "
                "pgrecall keeps memories in a real folder only: set [memory] folder in the config file to the target"
            )
        return self.folder.resolve()

    def locate(self, memory_id: str, trash: bool = False) -> Path | None:
        """The note of this id: a regular file inside the folder (or its trash), never through a link."""
        root = self.root()
        base = root / TRASH if trash else root
        if not base.is_dir() or base.is_symlink():
            return None
        for candidate in sorted(base.glob(f"[0-9][0-9][0-9][0-9]/[0-9][0-9]/*-{memory_id}.md")):
            if _is_ours(base, candidate):
                return candidate
        return None

    def load(self, path: Path, base: Path | None = None) -> Memory | None:
        """The memory of the note at `path` (relative to `base`, default the folder);
        MemoryUnreadable when it cannot be read."""
        base = base or self.root()
        relative = path.relative_to(base).as_posix()
        try:
            content = path.read_bytes().decode("utf-8", errors="replace")
        except OSError as exc:
            raise MemoryUnreadable(f"cannot read the memory note {relative}: {exc.strerror or exc}") from None
        return parse(relative, content)

    def read(self, memory_id: str) -> Memory | None:
        path = self.locate(memory_id)
        if path is None:
            return None
        memory = self.load(path)
        return memory if memory is not None and memory.id == memory_id else None

    def read_forgotten(self, memory_id: str) -> Memory | None:
        path = self.locate(memory_id, trash=True)
        if path is None:
            return None
        memory = self.load(path, self.root() / TRASH)
        if memory is None or memory.id != memory_id:
            return None
        return dataclasses.replace(memory, forgotten=mtime_iso(path))

    def relative(self, path: Path) -> str:
        return path.relative_to(self.root()).as_posix()

    def note_paths(self, trash: bool = False) -> list[Path]:
        """The folder's (or its trash's) note files, sorted: regular files by the note name, no links."""
        root = self.root()
        base = root / TRASH if trash else root
        if not base.is_dir() or base.is_symlink():
            return []
        return [path for path in sorted(base.glob("[0-9][0-9][0-9][0-9]/[0-9][0-9]/*.md")) if _is_ours(base, path)]

    def memories(self) -> Iterator[Memory]:
        self.unreadable = []
        for path in self.note_paths():
            try:
                memory = self.load(path)
            except MemoryUnreadable:
                self.unreadable.append(self.relative(path))
                continue
            if memory is not None:
                yield memory

    def forgotten(self) -> Iterator[Memory]:
        """The memories in the trash, each with the time it was forgotten."""
        self.unreadable = []
        base = self.root() / TRASH
        for path in self.note_paths(trash=True):
            try:
                memory = self.load(path, base)
            except MemoryUnreadable:
                self.unreadable.append(f"{TRASH}/{path.relative_to(base).as_posix()}")
                continue
            if memory is not None:
                yield dataclasses.replace(memory, forgotten=mtime_iso(path))


def mtime_iso(path: Path) -> str:
    import datetime

    moment = datetime.datetime.fromtimestamp(path.stat().st_mtime, datetime.UTC).replace(microsecond=0)
    return moment.isoformat().replace("+00:00", "Z")


def is_inside(root: Path, path: Path) -> bool:
    return path.resolve().is_relative_to(root.resolve())


def _is_ours(root: Path, path: Path) -> bool:
    return (
        NOTE_NAME.fullmatch(path.name) is not None
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


def read_memories(
    folder: Path,
    since: Any = None,
    tags: Any = None,
    limit: Any = 50,
    forgotten: bool = False,
    unreadable: list[str] | None = None,
) -> list[Memory]:
    """The memories of `folder` (`forgotten`: those in its trash, newest forgotten first), chosen as
    list_memories says, validated as every interface does. Notes that cannot be read are skipped
    and their paths appended to `unreadable`."""
    notes = MemoryNotes(folder)
    since, tags, limit = contract.memory_since(since), contract.memory_tags(tags), contract.list_limit(limit)
    if forgotten:
        chosen = select(notes.forgotten(), since=since, tags=tags, limit=contract.MAX_LIST)
        chosen.sort(key=lambda memory: (memory.forgotten or "", memory.id), reverse=True)
        chosen = chosen[:limit]
    else:
        chosen = select(notes.memories(), since=since, tags=tags, limit=limit)
    if unreadable is not None:
        unreadable.extend(notes.unreadable)
    return chosen


def list_memories(
    since: Any = None, tags: Iterable[str] | None = None, limit: int = 50, forgotten: bool = False
) -> list[Memory]:
    """Memories newest first (by update), updated since `since` (ISO date or time) and carrying
    every tag in `tags`; `forgotten`: those in the trash instead (restore() brings one back).
    Reads the folder only: no database is needed. Notes that cannot be read are skipped."""
    return read_memories(folder_of(load_settings()), since=since, tags=tags, limit=limit, forgotten=forgotten)
