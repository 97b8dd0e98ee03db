"""ISO 8601 times as files and transcripts write them, read leniently: one parser for every reader."""

from __future__ import annotations

import datetime
from typing import Any


def parse_time(value: Any) -> datetime.datetime | None:
    """An aware time from an ISO 8601 string (a trailing Z, or no zone: UTC); None when it is not one."""
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=datetime.UTC)
