"""The one validation of a search (pgrecall.contract.search_request), as Searcher.search applies it.

Every case is refused before any connection; tests/integration/test_search.py checks that the
searcher goes through this validation (k up to MAX_INTERNAL_K there)."""

import pytest

from pgrecall.contract import MAX_INTERNAL_K, search_request
from pgrecall.errors import InvalidInput


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"query": "  "}, "empty"),
        ({"query": "x" * 3000}, "longer than"),
        ({"query": "ok", "mode": "fuzzy"}, "unknown mode"),
        ({"query": "ok", "k": 0}, "k must be"),
        ({"query": "ok", "filters": {"owner": "me"}}, "unknown filter field 'owner'"),
        ({"query": "ok", "filters": {"modified_since": "yesterday"}}, "ISO date"),
    ],
)
def test_bad_input_is_refused_with_a_reason(kwargs, message):
    with pytest.raises(InvalidInput, match=message):
        search_request(**kwargs, max_k=MAX_INTERNAL_K)


def _nested(depth: int) -> dict:
    value: dict = {"leaf": 1}
    for _ in range(depth):
        value = {"a": value}
    return value


# Each of these reached PostgreSQL (or the JSON encoder) and failed there: a DataError,
# an UntranslatableCharacter, a UnicodeEncodeError, a TypeError; the HTTP API answered 500.
# (Nesting is bounded so that a filter stays a filter, and the message stays one short line.)
@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"query": "a\x00b"}, "the query must not contain a NUL character"),
        ({"query": "a\ud800b"}, "the query is not valid Unicode"),
        ({"query": "ok", "filters": {"path_prefix": "notes/\x00"}}, "filter path_prefix must not contain a NUL"),
        ({"query": "ok", "filters": {"kind": "\x00"}}, "filter kind must not contain a NUL"),
        ({"query": "ok", "filters": {"root": "no\x00tes"}}, "filter root must not contain a NUL"),
        ({"query": "ok", "filters": {"source_root": "/n\x00"}}, "filter source_root must not contain a NUL"),
        ({"query": "ok", "filters": {"metadata": {"a": float("nan")}}}, "filter metadata.a must hold finite numbers"),
        ({"query": "ok", "filters": {"metadata": {"a": [float("inf")]}}}, r"filter metadata.a\[0\] must hold finite"),
        ({"query": "ok", "filters": {"metadata": {"a": "x\x00"}}}, "filter metadata.a must not contain a NUL"),
        ({"query": "ok", "filters": {"metadata": {"a\x00": "x"}}}, "filter metadata key .* must not contain a NUL"),
        ({"query": "ok", "filters": {"metadata": {"a": {1, 2}}}}, "filter metadata.a must hold JSON values, not set"),
        ({"query": "ok", "filters": {"metadata": _nested(40)}}, "^filter metadata is nested deeper than 32 levels$"),
    ],
)
def test_input_postgres_cannot_take_is_refused_naming_the_field(kwargs, message):
    with pytest.raises(InvalidInput, match=message):
        search_request(**kwargs, max_k=MAX_INTERNAL_K)
