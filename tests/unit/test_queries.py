"""Named queries: what of a .sql file's text reaches the server."""

from __future__ import annotations

from importlib import resources

import pytest
from psycopg import _queries

from pgrecall.postgres import queries

SQL_FILES = sorted(
    path.name for path in (resources.files("pgrecall.sql") / "queries").iterdir() if path.name.endswith(".sql")
)


def test_a_query_keeps_its_code_and_its_name_but_not_the_comments_on_lines_of_their_own() -> None:
    text = """-- first --
-- What the query is for,
  -- over two lines.
SELECT 1 -- one, kept: a comment after code stays
FROM t  -- a table
-- second --
SELECT '--not a comment' AS x
"""
    named = queries.parse_named_queries(text)
    assert named == {
        "first": "-- first\nSELECT 1 -- one, kept: a comment after code stays\nFROM t  -- a table",
        "second": "-- second\nSELECT '--not a comment' AS x",
    }


@pytest.mark.parametrize("filename", SQL_FILES)
def test_every_named_query_fits_psycopgs_cache_of_converted_queries(filename: str) -> None:
    # A longer text is converted again (its placeholders found, its parameters' order made) at
    # every execution: 0.2 ms of every keyword search while the comments went with it.
    named = queries.load(filename)
    assert named, filename
    too_long = {name: len(text) for name, text in named.items() if len(text) > _queries.MAX_CACHED_STATEMENT_LENGTH}
    assert not too_long, too_long


def test_the_search_arms_expanded_with_their_filters_fit_it_too() -> None:
    from pgrecall.api import read_queries as store

    too_long = {key: len(text) for key, text in store.Q.items() if len(text) > _queries.MAX_CACHED_STATEMENT_LENGTH}
    assert not too_long, too_long
