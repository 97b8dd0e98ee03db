"""remember, update_memory, forget, restore, list_memories, memory_history, export/import_memories:
the memory write path for Python callers.

    from pgrecall.composition.memories import remember
    from pgrecall.api import search

    saved = remember("Deploys go out on Tuesdays: Friday deploys broke on-call twice.", tags=["ops"])
    saved.memory.id, saved.memory.path, saved.created    # ('3f9c0a1b2c4d', '2026/11/...md', True)
    search("when do we deploy?", k=1)[0].path            # saved.memory.path

Each write returns once the note is on disk and indexed, so the next search
finds it. They go through one memory client per process, opened on the first
call (PGRECALL_* settings, the database migrated as every write command does)
and closed when the interpreter exits. A composition module, outside the
read-only pgrecall.api: importing it loads neither the worker nor the queue
(the first write imports them); list_memories only reads the folder.
"""

from __future__ import annotations

import atexit
import os
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from pgrecall.memory.client import NearDuplicate, SecretInMemory, StaleVersion
from pgrecall.memory.notes import Memory, folder_of, list_memories
from pgrecall.memory.request import remember_request
from pgrecall.memory.version_history import Version, history
from pgrecall.settings import Settings, load_settings

if TYPE_CHECKING:
    from pgrecall.memory.client import Saved
    from pgrecall.worker.memory.importer import Summary
    from pgrecall.worker.memory.writer import MemoryClient

__all__ = [
    "NearDuplicate",
    "SecretInMemory",
    "StaleVersion",
    "close_default_client",
    "export_memories",
    "forget",
    "import_memories",
    "list_memories",
    "memory_history",
    "remember",
    "restore",
    "update_memory",
]

_client: MemoryClient | None = None
_client_lock = threading.Lock()


def writable_url(settings: Settings) -> str:
    """The index's database, migrated (as every command that writes does)."""
    from pgrecall.postgres.migrator import migrated_url

    return migrated_url(settings)


def open_client(settings: Settings) -> MemoryClient:
    """A memory client over the migrated index and the configured memory folder."""
    from pgrecall.worker.memory.writer import MemoryClient

    return MemoryClient(settings, writable_url(settings), folder_of(settings))


def _library_logging() -> None:
    """Unless the application configured structlog, pgrecall's events go to the standard
    library's logging (silent below WARNING until the application configures it) rather than
    to structlog's default: print() to stdout, mixed into the caller's own output."""
    import structlog

    if not structlog.is_configured():
        structlog.configure(
            processors=[structlog.stdlib.filter_by_level, structlog.processors.KeyValueRenderer(key_order=["event"])],
            logger_factory=structlog.stdlib.LoggerFactory(),
            wrapper_class=structlog.stdlib.BoundLogger,
        )


def default_client() -> MemoryClient:
    global _client
    with _client_lock:
        if _client is None:
            _library_logging()
            _client = open_client(load_settings())
            # Its event loop, pool and lock connection end with the interpreter, in order.
            atexit.unregister(close_default_client)
            atexit.register(close_default_client)
        return _client


def close_default_client() -> None:
    """Close the client of remember() and the others; the next call opens a new one."""
    global _client
    with _client_lock:
        client, _client = _client, None
    if client is not None:
        client.close()


def remember(
    text: str,
    title: str | None = None,
    tags: Iterable[str] = (),
    metadata: Mapping[str, str | int | float | bool] | None = None,
    source: str | None = None,
    project: str | None = None,
    force: bool = False,
    allow_secret: bool = False,
) -> Saved:
    """Write `text` as a note of the memory folder and index it; `project` (a folder, taken to its
    git top-level, or a name) is written as the front matter's `project`. Returns a `Saved`: `.memory`
    (id, path relative to the memory folder, title, text, tags, source, metadata, created,
    updated), `.created` (False: the same text was already remembered; that memory is
    returned, no duplicate is written), `.indexed` and `.similar` (memories alike but stating
    another fact: a number, code, name or negation differs; update one instead if this replaces
    it). Bad input raises InvalidInput.

    Nothing is saved, and pgrecall.memory.client.NearDuplicate is raised, when memories already
    say nearly the same (`.similar`: their id, text and similarity; update one with
    update_memory(id, ...), or pass `force=True`); SecretInMemory (an InvalidInput, `.kind`,
    `.where`) when the text or title holds a secret (`allow_secret=True` saves it anyway)."""
    from pgrecall.contract import with_project

    metadata = with_project(metadata, project)
    return default_client().remember(
        remember_request(
            text, title=title, tags=tags, metadata=metadata, source=source, force=force, allow_secret=allow_secret
        )
    )


def update_memory(
    memory_id: str,
    text: str | None = None,
    title: str | None = None,
    tags: Iterable[str] | None = None,
    expect: str | None = None,
    allow_secret: bool = False,
) -> Saved:
    """Rewrite the memory of this id (only what is given changes) and re-index it; MemoryNotFound
    (an InvalidInput) when there is none. `expect`: the `version` you read (every Memory has one);
    StaleVersion, and nothing changed, when the memory changed since. Without it: whatever it holds.
    A new text or title holding a secret raises SecretInMemory, unless `allow_secret`."""
    return default_client().update(
        memory_id, text=text, title=title, tags=tags, expect=expect, allow_secret=allow_secret
    )


def forget(memory_id: str, expect: str | None = None, purge: bool = False) -> Memory:
    """Move the memory of this id into the trash and out of the index (restore() brings it back);
    `purge`: delete it for good (also one already in the trash). Returns what it held."""
    return default_client().forget(memory_id, expect=expect, purge=purge)


def restore(memory_id: str, version: int | None = None) -> Saved:
    """Bring a forgotten memory back from the trash (list_memories(forgotten=True)), with its id, indexed;
    `version` (a Version's n, from memory_history): bring back what it held then, as a new version."""
    return default_client().restore(memory_id, version=version)


def memory_history(memory_id: str) -> list[Version]:
    """Every version of the memory, oldest first (.n, .event, .time, .hash, .memory(id)); reads the
    folder only. MemoryNotFound when it has none."""
    return history(folder_of(load_settings()), memory_id)


def export_memories() -> list[dict]:
    """Every memory (not the forgotten), oldest first, as `pgrecall memories export` writes them."""
    import json

    from pgrecall.memory.export import export_lines

    return [json.loads(line) for line in export_lines(folder_of(load_settings()))]


def import_memories(path: str | os.PathLike) -> Summary:
    """Read memories back (`pgrecall memories import`): an export's JSON Lines file, a basic-memory
    folder, a Markdown file or folder. Idempotent; the Summary says what was added, what was there."""
    return default_client().import_path(Path(path))
