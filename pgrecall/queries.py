"""Named SQL queries from the .sql files of pgrecall.sql.queries (sql/queries/): `-- name --` starts one."""

from __future__ import annotations

import functools
import re
from importlib import resources

_HEADER = re.compile(r"^-- ([a-z_]+) --\s*$", re.MULTILINE)


def parse_named_queries(text: str) -> dict[str, str]:
    parts = _HEADER.split(text)
    return {name: body.strip() for name, body in zip(parts[1::2], parts[2::2], strict=True)}


@functools.cache
def load(filename: str) -> dict[str, str]:
    text = (resources.files("pgrecall.sql") / "queries" / filename).read_text(encoding="utf-8")
    return parse_named_queries(text)
