"""Which of the index's vectors a query vector may be compared with.

A vector is only comparable with vectors of its own embedding space (model,
weights, dimensions, backend, quantization: pgrecall.embedders.embedding.Embedder.space).
The index records the space per document (migration 0012) and per chunk, with one HNSW
index per space (0023); while it is being embedded again (`pgrecall reembed`, a new
PGRECALL_EMBED_BACKEND or PGRECALL_MODEL) it holds two.
"""

from __future__ import annotations

from collections.abc import Collection

from pgrecall.errors import EmbeddingSpaceMismatch

UNRECORDED = "unrecorded (indexed before pgrecall recorded embedding spaces)"


def describe(space: str | None) -> str:
    return UNRECORDED if space is None else space


def vector_arm_space(index_spaces: Collection[str | None], query_space: str) -> str | None:
    """The space the vector arm searches: the query's, or None when the index holds no vectors.

    Each space has an HNSW index of its own (migration 0023), so the vector arm reads the
    query's space alone at the same speed however many other spaces the index holds (while
    `pgrecall reembed` or a new PGRECALL_MODEL fills one). Refuses (EmbeddingSpaceMismatch,
    one line naming both) when the index holds vectors but none of the query's space:
    comparing them would rank noise.
    """
    if not index_spaces:
        return None
    if query_space in index_spaces:
        return query_space
    indexed = ", ".join(sorted(describe(space) for space in index_spaces))
    raise EmbeddingSpaceMismatch(
        f"the index's vectors are of embedding space {indexed}, but this search embeds queries as "
        f"{query_space}: run `pgrecall reembed`, or set PGRECALL_EMBED_BACKEND/PGRECALL_MODEL to what built the index"
    )
