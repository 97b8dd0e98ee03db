"""Which of the index's vectors a query vector may be compared with.

A vector is only comparable with vectors of its own embedding space (model,
weights, dimensions, backend, quantization: pgrecall.embedding.Embedder.space).
The index records the space per document (migration 0012); while it is being
embedded again (`pgrecall reembed`, a new PGRECALL_EMBED_BACKEND) it holds two.
"""

from __future__ import annotations

from collections.abc import Collection

from pgrecall.errors import EmbeddingSpaceMismatch

UNRECORDED = "unrecorded (indexed before pgrecall recorded embedding spaces)"


def describe(space: str | None) -> str:
    return UNRECORDED if space is None else space


def vector_arm_space(index_spaces: Collection[str | None], query_space: str) -> str | None:
    """The space the vector arm must be restricted to, or None when every indexed vector is comparable.

    Refuses (EmbeddingSpaceMismatch, one line naming both) when the index holds
    vectors but none of the query's space: comparing them would rank noise.
    """
    if not index_spaces or set(index_spaces) == {query_space}:
        return None
    if query_space in index_spaces:
        return query_space  # part of the index is being embedded again: search what is comparable
    indexed = ", ".join(sorted(describe(space) for space in index_spaces))
    raise EmbeddingSpaceMismatch(
        f"the index's vectors are of embedding space {indexed}, but this search embeds queries as "
        f"{query_space}: run `pgrecall reembed`, or set PGRECALL_EMBED_BACKEND/PGRECALL_MODEL to what built the index"
    )
