"""Rewrites and removals of the same documents racing each other keep the BM25 statistics
equal to a recount: a transaction records the deltas of exactly the chunks it deletes.

The interleavings that drifted are forced one by one (a transaction held open while
another, blocked on its locks, waits), then many connections race at random over the
same few documents."""

from __future__ import annotations

import asyncio
import datetime
import random

import psycopg

from pgrecall.worker import store
from tests.support.statistics import COMMON, ROOT, assert_statistics_consistent, connect, rows, write

DEADLINE = 60.0  # a hang guard only


async def wait_until_blocked(url: str, pid: int, task: asyncio.Task) -> None:
    """Until the backend `pid` waits for a lock (the task must not have ended meanwhile)."""
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as observer:
        deadline = asyncio.get_running_loop().time() + DEADLINE
        while True:
            cursor = await observer.execute(
                "SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = %s", (pid,)
            )
            row = await cursor.fetchone()
            if row and row[0]:
                return
            assert not task.done(), "it ran without waiting for the open transaction"
            assert asyncio.get_running_loop().time() < deadline, "never blocked"
            await asyncio.sleep(0.01)


async def write_child(conn, parent_id: int, path: str, text: str) -> int:
    return await write(conn, path, text, parent_id=parent_id)


async def export_with_conversations(conn, count: int) -> int:
    info = store.FileInfo(1, datetime.datetime.now(datetime.UTC), "export-hash")
    parent_id = await store.record_container(
        conn, root=ROOT, path="export.json", kind="claude", info=info, chunking="test"
    )
    for n in range(count):
        await write_child(conn, parent_id, f"export.json#c{n}", f"# C{n}\n\n{COMMON} conversation{n}")
    return parent_id


REWRITE = "# Rewritten\n\nA rewrite with other words entirely: glaciers, fjords, moraines and " + "icefall " * 9


async def hold_open_then(url: str, first, second) -> object:
    """Run `first(a)` in a transaction of `a` left open, start `second(b)`, wait until it
    blocks on a's locks, commit a; returns what `second` returned."""
    a, b = await connect(url), await connect(url)
    try:
        async with a.transaction():
            await first(a)
            racer = asyncio.create_task(second(b))
            await wait_until_blocked(url, b.info.backend_pid, racer)
        return await asyncio.wait_for(racer, DEADLINE)
    finally:
        await a.close()
        await b.close()


async def seed(url: str, path: str = "shared.md") -> None:
    conn = await connect(url)
    try:
        await write(conn, path, f"# Shared\n\n{COMMON} The original words: replication, lag, checkpoints.")
        await write(conn, "other.md", f"# Other\n\n{COMMON} Another note keeps the corpus from emptying.")
    finally:
        await conn.close()


def test_a_removal_waiting_for_a_rewrite_records_the_rewritten_chunks_it_deletes(db_url):
    """The rewrite holds the document; the removal, blocked behind it, deletes the new chunks
    and must record those (it used to read the old ones before blocking)."""
    asyncio.run(seed(db_url))

    async def scenario():
        return await hold_open_then(
            db_url,
            lambda a: write(a, "shared.md", REWRITE),
            lambda b: store.remove(b, root=ROOT, path="shared.md", exact=True),
        )

    assert asyncio.run(scenario()) == 1
    assert rows(db_url, "SELECT path FROM pgrecall.documents") == [("other.md",)]
    assert_statistics_consistent(db_url)


def test_two_removals_of_one_document_record_its_statistics_once(db_url):
    asyncio.run(seed(db_url))

    async def scenario():
        return await hold_open_then(
            db_url,
            lambda a: store.remove(a, root=ROOT, path="shared.md", exact=True),
            lambda b: store.remove(b, root=ROOT, path="shared.md", exact=True),
        )

    removed = asyncio.run(scenario())
    assert_statistics_consistent(db_url)
    assert removed == 0  # the first removal took it


def test_a_removal_of_a_folder_waiting_for_a_rewrite_inside_it_records_what_it_deletes(db_url):
    asyncio.run(seed(db_url, "folder/shared.md"))

    async def scenario():
        return await hold_open_then(
            db_url,
            lambda a: write(a, "folder/shared.md", REWRITE),
            lambda b: store.remove(b, root=ROOT, path="folder"),
        )

    assert asyncio.run(scenario()) == 1
    assert_statistics_consistent(db_url)


def test_a_rewrite_waiting_for_a_removal_starts_from_no_statistics(db_url):
    """The removal committed while the rewrite waited: the rewrite inserts the document anew."""
    asyncio.run(seed(db_url))

    async def scenario():
        return await hold_open_then(
            db_url,
            lambda a: store.remove(a, root=ROOT, path="shared.md", exact=True),
            lambda b: write(b, "shared.md", REWRITE),
        )

    asyncio.run(scenario())
    assert rows(db_url, "SELECT count(*) FROM pgrecall.documents WHERE path = 'shared.md'") == [(1,)]
    assert_statistics_consistent(db_url)


def test_a_rename_onto_a_document_being_rewritten_records_the_replaced_chunks(db_url):
    asyncio.run(seed(db_url))

    async def scenario():
        return await hold_open_then(
            db_url,
            lambda a: write(a, "shared.md", REWRITE),
            lambda b: store.rename(b, root=ROOT, source="other.md", destination="shared.md"),
        )

    assert asyncio.run(scenario()) == 1
    assert rows(db_url, "SELECT path FROM pgrecall.documents") == [("shared.md",)]
    assert_statistics_consistent(db_url)


def test_an_export_removed_while_a_conversation_is_added_takes_the_conversation_with_it(db_url):
    """The new conversation was not among the export's when the removal listed them; it
    is deleted with its parent all the same, so its statistics must go too."""

    async def build():
        conn = await connect(db_url)
        try:
            return await export_with_conversations(conn, 2)
        finally:
            await conn.close()

    parent_id = asyncio.run(build())
    asyncio.run(seed(db_url))

    async def scenario():
        return await hold_open_then(
            db_url,
            lambda a: write_child(a, parent_id, "export.json#new", f"# New\n\n{COMMON} a conversation added late"),
            lambda b: store.remove(b, root=ROOT, path="export.json", exact=True),
        )

    removed = asyncio.run(scenario())
    assert_statistics_consistent(db_url)
    assert removed == 4  # the export, its two conversations and the new one
    assert rows(db_url, "SELECT count(*) FROM pgrecall.documents WHERE path LIKE 'export.json%%'") == [(0,)]


def test_conversations_removed_while_one_of_them_is_rewritten_record_what_they_delete(db_url):
    async def build():
        conn = await connect(db_url)
        try:
            return await export_with_conversations(conn, 3)
        finally:
            await conn.close()

    parent_id = asyncio.run(build())

    async def scenario():
        return await hold_open_then(
            db_url,
            lambda a: write_child(a, parent_id, "export.json#c1", REWRITE),
            lambda b: store.remove_children(b, parent_id, ["export.json#c0", "export.json#c1"]),
        )

    assert asyncio.run(scenario()) == 2
    assert_statistics_consistent(db_url)


PATHS = ["a.md", "b.md", "c.md"]
CONNECTIONS = 8
ROUNDS = 40


def test_many_connections_rewriting_and_removing_the_same_documents_keep_statistics_exact(db_url):
    """Eight connections, forty rounds each, over three documents: each round rewrites one
    (with words of its own) or removes it. Every interleaving ends equal to a recount."""

    async def racer(number: int) -> None:
        chooser = random.Random(number)
        conn = await connect(db_url)
        try:
            for round_ in range(ROUNDS):
                path = chooser.choice(PATHS)
                if chooser.random() < 0.4:
                    await store.remove(conn, root=ROOT, path=path, exact=True)
                else:
                    words = " ".join(f"r{number}x{round_}w{w}" for w in range(1 + chooser.randrange(12)))
                    await write(conn, path, f"# {path}\n\n{COMMON} {words} shared{round_ % 3}.")
        finally:
            await conn.close()

    async def scenario():
        await asyncio.wait_for(asyncio.gather(*(racer(n) for n in range(CONNECTIONS))), DEADLINE * 2)

    asyncio.run(scenario())
    assert_statistics_consistent(db_url)
