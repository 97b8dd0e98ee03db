"""The memory client as the interfaces see it: what HTTP handlers and MCP tools call to write memories.

A typing.Protocol, so that the read side can name the type without importing the
write path: pgrecall.worker.memory_service.MemoryClient implements it, and the
composition root (pgrecall.cli, pgrecall.memories) builds it and hands it over.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from pgrecall import contract
from pgrecall.errors import PgRecallError
from pgrecall.memory_history import Version
from pgrecall.memory_notes import Memory


class MemoryNotFound(contract.NotFound):
    """No such memory."""


class StaleVersion(PgRecallError):
    """The memory changed since the caller read it: read it again (its `version`) and retry."""


@dataclasses.dataclass(frozen=True)
class Saved:
    memory: Memory
    created: bool  # False: the same text was already remembered
    indexed: bool  # False: the file is written; the index follows once the database answers

    def to_json(self) -> dict[str, Any]:
        # "new", not "created": that key is the memory's creation time.
        return {**self.memory.to_json(), "new": self.created, "indexed": self.indexed}


class MemoryWriter(Protocol):
    """Writes memories (notes of the memory folder) and indexes them before returning.
    Input is validated by pgrecall.contract: bad input raises InvalidInput, an unknown id MemoryNotFound.
    `expect` (update, forget): the `version` the caller read; another one raises StaleVersion and
    nothing changes. Without it the call applies to whatever the memory holds (as before versions).
    forget moves the note into the trash (restore brings it back); `purge` deletes it for good.
    history: every version of a memory, oldest first; restore with `version` brings one back."""

    def remember(
        self,
        text: str,
        title: str | None = None,
        tags: Iterable[str] | None = (),
        metadata: Mapping[str, Any] | None = None,
        source: str | None = None,
    ) -> Saved: ...

    def update(
        self,
        memory_id: str,
        text: str | None = None,
        title: str | None = None,
        tags: Iterable[str] | None = None,
        expect: str | None = None,
    ) -> Saved: ...

    def forget(self, memory_id: str, expect: str | None = None, purge: bool = False) -> Memory: ...

    def restore(self, memory_id: str, version: int | None = None) -> Saved: ...

    def history(self, memory_id: str) -> list[Version]: ...

    def import_lines(self, content: str) -> Any: ...  # a pgrecall.worker.memory_import.Summary

    def list(
        self, since: str | None = None, tags: Iterable[str] | None = None, limit: int = 50, forgotten: bool = False
    ) -> list[Memory]: ...

    def close(self) -> None: ...
