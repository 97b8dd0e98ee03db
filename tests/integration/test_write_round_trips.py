"""A document write's round trips to the server, counted on the wire in libpq's trace of the
connection: every point where the writer sends a message and then waits on the server's
answer. That is a simple Query (BEGIN, the COPY, COMMIT), the CopyDone ending the COPY's data,
and a run of Sync and Flush messages, which ends a pipeline or asks for its results so far
(psycopg's pipeline mode: the statements before it wait there together)."""

from __future__ import annotations

import asyncio
import os
import tempfile

from tests.support.statistics import COMMON, connect, note, write_parts

FIRST = f"# Kettle\n\n{COMMON} The kettle descales with citric acid.\n\n## Filter\n\nRinse the filter weekly."
EDITED = f"# Kettle\n\n{COMMON} The kettle descales with vinegar now.\n\n## Filter\n\nRinse the filter weekly."
WAITING = {"Query", "CopyDone"}
ASKING = {"Sync", "Flush"}


def waits(messages: list[str]) -> int:
    """The round trips in the message types a client sent, in order."""
    count, asking = 0, False
    for message in messages:
        count += message in WAITING or (message in ASKING and not asking)
        asking = message in ASKING
    return count


def test_waits_counts_a_run_of_syncs_and_flushes_once():
    assert waits(["Query", "Parse", "Bind", "Execute", "Flush", "Parse", "Sync", "Flush", "Query"]) == 4
    assert waits(["Query", "CopyData", "CopyDone", "Parse", "Sync"]) == 3


def _round_trips(db_url: str, texts: list[str]) -> list[int]:
    """The round trips of writing kettle.md with each text in turn, on one connection."""

    async def scenario() -> list[int]:
        conn = await connect(db_url)
        counts = []
        try:
            for text in texts:
                with tempfile.TemporaryFile("w+") as trace:
                    conn.pgconn.trace(trace.fileno())
                    try:
                        await write_parts(conn, *note("kettle.md", text))
                    finally:
                        conn.pgconn.untrace()
                    trace.seek(0, os.SEEK_SET)
                    sent = [line.split("\t") for line in trace.read().splitlines()]
                counts.append(waits([fields[3] for fields in sent if len(fields) > 3 and fields[1] == "F"]))
        finally:
            await conn.close()
        return counts

    return asyncio.run(scenario())


def test_a_write_waits_on_the_server_seven_times_for_a_new_document_and_nine_for_an_edit(db_url):
    # BEGIN; the first pipeline (commit setting, staging table, space, upsert) read for the
    # document's id; its end, with the chunks' keys; the COPY and its end; the second pipeline
    # (delete, chunks, postings, term count, statistics); COMMIT. One statement at a time, as
    # before the pipelines: 14 and 17. An edit reads the statistics it had before (both
    # queries in one round trip) and refreshes the lengths on the postings it keeps.
    new, edited = _round_trips(db_url, [FIRST, EDITED])
    assert (new, edited) == (7, 9)
