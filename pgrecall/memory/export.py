"""Export of memories: every memory of the folder as JSON Lines, read from the folder (no database).

A line is one memory: id, title, text, tags, source, metadata, created, updated, and project (the
metadata's, repeated for readers of the file). pgrecall.worker.memory.importer reads it back.
"""

from __future__ import annotations

import json
from pathlib import Path

from pgrecall.memory.notes import Memory, MemoryNotes

EXPORT_FIELDS = ("id", "title", "text", "tags", "source", "metadata", "created", "updated", "project")


def export_line(memory: Memory) -> str:
    entry = {
        "id": memory.id,
        "title": memory.title,
        "text": memory.text,
        "tags": list(memory.tags),
        "source": memory.source,
        "metadata": dict(memory.metadata),
        "created": memory.created,
        "updated": memory.updated,
        "project": memory.metadata.get("project"),
    }
    return json.dumps(entry, ensure_ascii=False, sort_keys=False)


def export_lines(folder: Path, unreadable: list[str] | None = None) -> list[str]:
    """Every memory of the folder (not the trash), oldest first, one JSON line each (no database);
    the notes that cannot be read are left out and their paths appended to `unreadable`."""
    notes = MemoryNotes(folder)
    chosen = sorted(notes.memories(), key=lambda memory: (memory.created, memory.id))
    if unreadable is not None:
        unreadable.extend(notes.unreadable)
    return [export_line(memory) for memory in chosen]
