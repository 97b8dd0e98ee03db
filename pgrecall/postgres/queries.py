"""Named SQL queries from the .sql files of pgrecall.sql.queries (sql/queries/): `-- name --` starts one.

The comments on lines of their own are for the reader of the .sql file and stay there: a query
goes to the server with its name as its one comment (what pg_stat_activity and
pg_prepared_statements show). psycopg converts a query text once and caches it only up to 4,096
characters; the keyword arm's query with its comments was longer, and converting it again took
about 0.2 ms of every keyword search (issue 24's profile)."""

from __future__ import annotations

import functools
import re
from importlib import resources

_HEADER = re.compile(r"^-- ([a-z_]+) --\s*$", re.MULTILINE)
_COMMENT_LINE = re.compile(r"^[ \t]*--.*(?:\n|$)", re.MULTILINE)


def parse_named_queries(text: str) -> dict[str, str]:
    parts = _HEADER.split(text)
    return {
        name: f"-- {name}\n" + _COMMENT_LINE.sub("", body).strip()
        for name, body in zip(parts[1::2], parts[2::2], strict=True)
    }


@functools.cache
def load(filename: str) -> dict[str, str]:
    text = (resources.files("pgrecall.sql") / "queries" / filename).read_text(encoding="utf-8")
    return parse_named_queries(text)
