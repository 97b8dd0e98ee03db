"""What a remember is asked: one validated request, built at each interface and handed through the
layers (the interface, the memory writer, its service, the door) as it is, like contract.SearchRequest."""

from __future__ import annotations

import dataclasses
from typing import Any

from pgrecall import contract
from pgrecall.errors import InvalidInput


@dataclasses.dataclass(frozen=True)
class RememberRequest:
    """One memory to remember, validated by remember_request."""

    text: str
    title: str | None = None
    tags: tuple[str, ...] = ()
    metadata: dict[str, str | int | float | bool] = dataclasses.field(default_factory=dict)
    source: str | None = None  # who writes it: "cli", "http", an MCP client's name, ...
    force: bool = False  # save even a near-duplicate (the exact same text still returns its memory)
    allow_secret: bool = False  # save even a text or title holding a secret


def remember_request(
    text: Any,
    title: Any = None,
    tags: Any = (),
    metadata: Any = None,
    source: Any = None,
    force: Any = False,
    allow_secret: Any = False,
) -> RememberRequest:
    """The one validation of a remember: InvalidInput (one line naming the field) or a RememberRequest."""
    request = RememberRequest(
        text=contract.memory_text(text),
        title=contract.memory_title(title),
        tags=contract.memory_tags(tags),
        metadata=contract.memory_metadata(metadata),
        source=contract.memory_source(source),
        force=force,
        allow_secret=allow_secret,
    )
    if not isinstance(force, bool):
        raise InvalidInput("force must be true or false")
    if not isinstance(allow_secret, bool):
        raise InvalidInput("allow_secret must be true or false")
    return request
