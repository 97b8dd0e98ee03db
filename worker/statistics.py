"""BM25 statistics as base rows plus deltas, and the fold that merges them (0013).

A writer records what its transaction changes as new rows of
pgrecall.term_stat_deltas and pgrecall.corpus_stat_deltas: it shares no row
with any other writer, so concurrent writers never wait on each other for the
statistics. Readers (the keyword arm, posting impacts) sum base and deltas.

`fold` moves the committed deltas into pgrecall.term_stats and
pgrecall.corpus_stats in one transaction, pruning terms whose count reached
zero. One folder at a time: the others skip at once (a non-blocking advisory
lock), so folding never waits and never deadlocks. Rows of transactions still
open are invisible to the fold and stay for the next one; readers see the
statistics before or after a fold, never half of one, and the same numbers
either way.

Folds run in the write path, every FOLD_EVERY statistics-changing
transactions of a process (`after_write`), and on a timer in the service
(`fold_forever`), which folds what a burst of writes left behind.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time

import psycopg
import structlog

from pgrecall.errors import first_line
from pgrecall.postgres import queries

log = structlog.get_logger("pgrecall.statistics")
Q = queries.load("index.sql")
FOLD_LOCK_KEY = 0x70677273  # "pgrs": one folder at a time
FOLD_EVERY = 200  # statistics-changing transactions of one process between folds
FOLD_SECONDS = 10.0  # the service's timer

_unfolded = 0  # statistics-changing transactions of this process since its last fold


@dataclasses.dataclass(frozen=True)
class Fold:
    term_deltas: int  # delta rows folded
    terms_updated: int  # term_stats rows inserted or changed
    terms_pruned: int  # term_stats rows deleted (count reached zero)
    corpus_deltas: int


async def fold(conn: psycopg.AsyncConnection) -> Fold | None:
    """Fold the committed deltas into the base statistics; None when another folder holds the lock.

    `conn` must not be inside a transaction: the fold is one of its own."""
    started = time.perf_counter()
    async with conn.transaction():
        cursor = await conn.execute(Q["fold_lock"], {"key": FOLD_LOCK_KEY})
        if not (await cursor.fetchone())[0]:
            return None
        cursor = await conn.execute(Q["fold_term_stats"])
        term_deltas, updated, pruned = await cursor.fetchone()
        cursor = await conn.execute(Q["fold_corpus_stats"])
        (corpus_deltas,) = await cursor.fetchone()
    result = Fold(term_deltas, updated, pruned, corpus_deltas)
    if term_deltas or corpus_deltas:
        log.info(
            "statistics_folded",
            term_deltas=term_deltas,
            terms_updated=updated,
            terms_pruned=pruned,
            corpus_deltas=corpus_deltas,
            ms=round((time.perf_counter() - started) * 1000, 1),
        )
    return result


async def after_write(conn: psycopg.AsyncConnection) -> None:
    """Called after a transaction that recorded deltas: folds every FOLD_EVERY of them.

    Inside a caller's transaction nothing is folded (the next call does it)."""
    global _unfolded
    _unfolded += 1
    if _unfolded < FOLD_EVERY or conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
        return
    _unfolded = 0
    try:
        await fold(conn)
    except psycopg.Error as exc:  # the write has committed: its deltas wait for the next fold
        log.warning("statistics_fold_failed", error=first_line(exc))


async def fold_forever(pool, seconds: float = FOLD_SECONDS) -> None:
    """The service's timer: fold what writers left, every `seconds`."""
    while True:
        async with pool.connection() as conn:
            await fold(conn)
        await asyncio.sleep(seconds)
