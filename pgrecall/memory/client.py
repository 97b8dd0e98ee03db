"""The memory client as the interfaces see it: what HTTP handlers and MCP tools call to write memories.

A typing.Protocol, so that the read side can name the type without importing the
write path: pgrecall.worker.memory.writer.MemoryClient implements it, and the
composition root (pgrecall.cli, pgrecall.composition.memories) builds it and hands it over.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any, Protocol

from pgrecall.errors import InvalidInput, PgRecallError
from pgrecall.memory.notes import Memory, MemoryNotFound  # noqa: F401 - MemoryNotFound: the interfaces' name for it
from pgrecall.memory.request import RememberRequest
from pgrecall.memory.version_history import Version


class StaleVersion(PgRecallError):
    """The memory changed since the caller read it: read it again (its `version`) and retry."""


@dataclasses.dataclass(frozen=True)
class SimilarMemory:
    """A memory near a text being remembered: its id, the text its note holds, the cosine similarity."""

    id: str
    text: str
    similarity: float

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "text": self.text, "similarity": round(self.similarity, 4)}


# How each interface says "update that memory" and "save anyway": a caller is told its own words.
WORDINGS = {
    "python": ("pgrecall.composition.memories.update_memory({id!r}, text=...)", "force=True"),
    "mcp": ("update_memory(id={id!r}, text=...)", "force=true"),
    "cli": ("pgrecall update {id} --text ...", "--force"),
    "http": ("PATCH /memories/{id}", '"force": true in the body'),
    "web": ("its page, /memories/{id}", "the form's Save anyway"),
}


def _quoted(text: str, limit: int = 120) -> str:
    said = " ".join(text.split())
    return repr(said if len(said) <= limit else said[: limit - 1] + "…")


def _listed(similar: tuple[SimilarMemory, ...]) -> str:
    """Each memory once: its id and the text its note holds."""
    return "; ".join(f"{memory.id}: {_quoted(memory.text)}" for memory in similar)


class NearDuplicate(PgRecallError):
    """A memory already says nearly the same: update it (update_memory) or save anyway (force=True)."""

    def __init__(self, similar: tuple[SimilarMemory, ...]):
        super().__init__(self.describe(similar))
        self.similar = similar  # most similar first

    @staticmethod
    def describe(similar: tuple[SimilarMemory, ...], interface: str = "python") -> str:
        """One line an assistant or a person acts on: which memories already say this, and what to do
        in the words of `interface` (WORDINGS)."""
        update, force = WORDINGS[interface]
        return (
            f"not saved: a memory already says nearly the same ({_listed(similar)}): "
            f"update it with {update.format(id=similar[0].id)} or save anyway with {force}"
        )

    @property
    def ids(self) -> list[str]:
        return [memory.id for memory in self.similar]

    def to_json(self, interface: str = "python") -> dict[str, Any]:
        return {
            "error": self.describe(self.similar, interface),
            "near_duplicates": [memory.to_json() for memory in self.similar],
        }


def resembles(similar: tuple[SimilarMemory, ...], interface: str = "python") -> str:
    """What a saved answer adds when memories are alike but state another fact (a number, code,
    name or negation differs): which they are, and how to update one instead, in `interface`'s words."""
    update, _ = WORDINGS[interface]
    return (
        f"saved as a new fact; it resembles {_listed(similar)}: if it replaces that memory, "
        f"update it with {update.format(id=similar[0].id)} and forget this one"
    )


class SecretInMemory(InvalidInput):
    """The memory holds a secret: nothing was saved (allow_secret=True saves it anyway)."""

    def __init__(self, message: str, kind: str, where: str):
        super().__init__(message)
        self.kind = kind  # "github token", "password", ...: pgrecall.worker.redaction's kinds
        self.where = where  # "text, line 2, column 14": never the secret itself


@dataclasses.dataclass(frozen=True)
class Saved:
    memory: Memory
    created: bool  # False: the same text was already remembered
    indexed: bool  # False: the file is written; the index follows once the database answers
    # Memories alike but stating another fact (remember): the caller may update one of them instead.
    similar: tuple[SimilarMemory, ...] = ()

    def to_json(self) -> dict[str, Any]:
        # "new", not "created": that key is the memory's creation time.
        return {
            **self.memory.to_json(),
            "new": self.created,
            "indexed": self.indexed,
            "similar": [memory.to_json() for memory in self.similar],
        }


class MemoryWriter(Protocol):
    """Writes memories (notes of the memory folder) and indexes them before returning.
    Input is validated by pgrecall.contract: bad input raises InvalidInput, an unknown id MemoryNotFound.
    `expect` (update, forget): the `version` the caller read; another one raises StaleVersion and
    nothing changes. Without it the call applies to whatever the memory holds (as before versions).
    forget moves the note into the trash (restore brings it back); `purge` deletes it for good.
    remember refuses, and saves nothing: a text nearly the same as a memory's (NearDuplicate, naming
    them; `force` saves it anyway) and, as update does, one holding a secret (SecretInMemory; `allow_secret`).
    history: every version of a memory, oldest first; restore with `version` brings one back."""

    def remember(self, request: RememberRequest) -> Saved: ...

    def update(
        self,
        memory_id: str,
        text: str | None = None,
        title: str | None = None,
        tags: Iterable[str] | None = None,
        expect: str | None = None,
        allow_secret: bool = False,
    ) -> Saved: ...

    def forget(self, memory_id: str, expect: str | None = None, purge: bool = False) -> Memory: ...

    def restore(self, memory_id: str, version: int | None = None) -> Saved: ...

    def history(self, memory_id: str) -> list[Version]: ...

    def import_lines(self, content: str) -> Any: ...  # a pgrecall.worker.memory.importer.Summary

    def list(
        self, since: str | None = None, tags: Iterable[str] | None = None, limit: int = 50, forgotten: bool = False
    ) -> list[Memory]: ...

    def close(self) -> None: ...
