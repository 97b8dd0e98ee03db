"""A document write commits without waiting for its WAL to reach the disk (index.sql,
commit_without_flush); every other transaction of its connection still waits, as a job's
completion does, whose flush takes the write with it.

Counted on the server: the WAL fsyncs the writing backend itself made (pg_stat_get_backend_io,
PostgreSQL 18). A backend that crosses into a new WAL segment syncs the old one whatever the
setting, so the counts are bounds, not exact figures.
"""

from __future__ import annotations

import asyncio

import psycopg

from pgrecall.worker import store
from tests.support.statistics import ROOT, connect, write

WRITES = 10


async def _wal_fsyncs(conn: psycopg.AsyncConnection) -> int:
    """The WAL fsyncs this connection's backend made so far (its own statistics flushed first)."""
    await conn.execute("SELECT pg_stat_force_next_flush()")
    await conn.commit()
    cursor = await conn.execute(
        "SELECT coalesce(sum(fsyncs), 0)::bigint FROM pg_stat_get_backend_io(pg_backend_pid()) WHERE object = 'wal'"
    )
    (count,) = await cursor.fetchone()
    await conn.commit()
    return count


def test_a_document_write_does_not_wait_for_the_disk_and_the_next_transaction_does(db_url):
    async def scenario() -> tuple[int, int, str]:
        conn = await connect(db_url)
        try:
            before = await _wal_fsyncs(conn)
            for number in range(WRITES):
                await write(conn, f"note-{number}.md", f"# Note {number}\n\nReplication lag on node {number}.")
            after_writes = await _wal_fsyncs(conn)
            (setting,) = await (await conn.execute("SHOW synchronous_commit")).fetchone()
            await conn.commit()
            for number in range(3):  # removals commit as every other transaction does: they wait
                await store.remove(conn, root=ROOT, path=f"note-{number}.md")
            after_removals = await _wal_fsyncs(conn)
        finally:
            await conn.close()
        return after_writes - before, after_removals - after_writes, setting

    write_fsyncs, removal_fsyncs, setting = asyncio.run(scenario())
    assert write_fsyncs <= 2, f"{write_fsyncs} WAL fsyncs for {WRITES} document writes"
    assert removal_fsyncs >= 1  # the count sees a commit that waits
    assert setting == "on"  # SET LOCAL: the connection's next transactions wait again
