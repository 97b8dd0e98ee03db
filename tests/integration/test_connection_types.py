"""pgvector's types registered on a connection in one statement (pgrecall.postgres.database.configure_connection),
with what pgvector.psycopg.register_vector would give: every vector type round-trips, on sync and
async connections, and the connection is left as it was found."""

import asyncio

import numpy as np
import psycopg
import pytest
from pgvector import Bit, HalfVector, SparseVector, Vector
from psycopg.pq import TransactionStatus

from pgrecall.postgres import database

ROUND_TRIP = "SELECT %s::vector, %s::halfvec, %s::sparsevec, %s::bit(4)"
VALUES = (
    np.array([1.5, -2.0, 0.25], dtype=np.float32),
    HalfVector([1.0, 2.0]),
    SparseVector({0: 1.0, 4: 3.0}, 6),
    Bit("1010"),
)


def assert_round_trips(row):
    vector, half, sparse, bit = row
    assert isinstance(vector, Vector) and vector.to_list() == [1.5, -2.0, 0.25]
    assert isinstance(half, HalfVector) and half.to_list() == [1.0, 2.0]
    assert isinstance(sparse, SparseVector) and sparse.to_list() == [1.0, 0.0, 0.0, 0.0, 3.0, 0.0]
    assert bit == "1010"  # pgvector registers a dumper for Bit, no loader


@pytest.mark.parametrize("autocommit", [False, True])
def test_every_vector_type_round_trips_and_the_connection_is_left_idle(db_url, autocommit):
    with psycopg.connect(db_url, autocommit=autocommit) as conn:
        database.configure_connection(conn)
        assert conn.info.transaction_status == TransactionStatus.IDLE  # a pool refuses anything else
        assert_round_trips(conn.execute(ROUND_TRIP, VALUES).fetchone())


def test_inside_a_transaction_the_transaction_stays_open(db_url):
    with psycopg.connect(db_url) as conn:
        conn.execute("CREATE TEMP TABLE t (v vector(3))")
        database.configure_connection(conn)
        assert conn.info.transaction_status == TransactionStatus.INTRANS
        conn.execute("INSERT INTO t VALUES (%s)", (VALUES[0],))
        assert conn.execute("SELECT v FROM t").fetchone()[0].to_list() == [1.5, -2.0, 0.25]


def test_the_async_connection_gets_the_same_types(db_url):
    async def configure_and_read():
        async with await psycopg.AsyncConnection.connect(db_url) as conn:
            await database.configure_connection_async(conn)
            assert conn.info.transaction_status == TransactionStatus.IDLE
            return await (await conn.execute(ROUND_TRIP, VALUES)).fetchone()

    assert_round_trips(asyncio.run(configure_and_read()))


def test_without_the_extension_it_is_the_error_connect_tolerates_before_the_first_migration(empty_db_url):
    with psycopg.connect(empty_db_url) as conn:
        with pytest.raises(psycopg.ProgrammingError, match="vector type not found"):
            database.configure_connection(conn)
        assert conn.info.transaction_status == TransactionStatus.IDLE
    with database.connect(empty_db_url) as conn:  # tolerated: nothing registered, the connection usable
        assert conn.execute("SELECT 1").fetchone() == (1,)
