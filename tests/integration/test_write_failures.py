"""A document write that fails part-way (write_document sends its statements in pipelines)
changes nothing: the version indexed before stays whole, the statistics equal a recount, and
the connection writes the next document."""

from __future__ import annotations

import asyncio
import dataclasses

import numpy as np
import psycopg
import pytest

from tests.support.statistics import COMMON, assert_statistics_consistent, connect, note, rows, write, write_parts

BEFORE = f"# Kettle\n\n{COMMON} The kettle descales with citric acid.\n\n## Filter\n\nRinse the filter weekly."
AFTER = f"# Kettle\n\n{COMMON} The kettle descales with vinegar now.\n\n## Filter\n\nRinse the filter weekly."


def _indexed(url: str) -> list[tuple]:
    return rows(
        url,
        """SELECT d.path, d.content_hash, c.ordinal, c.text, c.embedding::text
           FROM pgrecall.documents d JOIN pgrecall.chunks c ON c.document_id = d.id
           WHERE d.path = 'kettle.md' ORDER BY c.ordinal""",
    )


async def _write_failing(conn, how: str) -> None:
    document, chunks, vectors = note("kettle.md", AFTER)
    if how == "vectors of no width":  # refused before the first pipeline sends the space
        vectors = np.empty((len(chunks), 0), dtype=np.float32)
    elif how == "a NUL in the metadata":  # jsonb refuses it: the upsert fails in the first pipeline
        document = dataclasses.replace(document, metadata={"tag": "a\u0000b"})
    elif how == "a vector with NaN":  # pgvector refuses it: the COPY between the pipelines fails
        vectors = vectors.copy()
        vectors[-1, 0] = np.nan
    elif how == "two chunks of one place":  # (document, ordinal) is unique: insert_chunks fails in the second pipeline
        chunks = [chunks[0], dataclasses.replace(chunks[0], text=chunks[0].text + " Twice."), *chunks[1:]]
        vectors = np.vstack([vectors[:1], vectors])
    await write_parts(conn, document, chunks, vectors)


@pytest.mark.parametrize(
    "how", ["vectors of no width", "a NUL in the metadata", "a vector with NaN", "two chunks of one place"]
)
def test_a_failed_rewrite_keeps_the_indexed_version_and_the_connection(db_url, how):
    async def scenario():
        conn = await connect(db_url)
        try:
            await write(conn, "kettle.md", BEFORE)
            indexed = _indexed(db_url)
            with pytest.raises((ValueError, psycopg.Error)):
                await _write_failing(conn, how)
            assert _indexed(db_url) == indexed
            await write(conn, "other.md", f"# Other\n\n{COMMON} Something else entirely.")
            await write(conn, "kettle.md", AFTER)
        finally:
            await conn.close()

    asyncio.run(scenario())
    assert rows(db_url, "SELECT count(*) FROM pgrecall.documents") == [(2,)]
    assert any("vinegar" in text for _, _, _, text, _ in _indexed(db_url))
    assert_statistics_consistent(db_url)
