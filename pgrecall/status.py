"""What pgrecall reports about itself: `pgrecall status`, `pgrecall failures` and the search side's /health.

Read here and nowhere else, from synchronous connections, with the named
queries of sql/queries/status.sql. Both sides import it: the command line and
the read-only search side (which must never import the worker), so it imports
nothing of `pgrecall.worker`; what only the worker knows (how many files a
root's folder holds) comes in as a function.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
from psycopg.rows import dict_row

from pgrecall import kinds
from pgrecall.postgres import queries
from pgrecall.postgres.locks import WATCH_LOCK_PREFIX
from pgrecall.settings import Settings

# The Procrastinate queue of pgrecall's jobs: the worker's tasks are deferred to it.
QUEUE = "pgrecall"

Q = queries.load("status.sql")
_KINDS = {"not_documents": list(kinds.NOT_DOCUMENTS), "skipped_stage": kinds.SKIPPED_STAGE}


def _row(conn: psycopg.Connection, name: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    """The one row of query `name`, by column name."""
    with conn.cursor(row_factory=dict_row) as cursor:
        row = cursor.execute(Q[name], params).fetchone()
    assert row is not None  # aggregates without GROUP BY: one row, always
    return row


def _rows(conn: psycopg.Connection, name: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The rows of query `name`, by column name."""
    with conn.cursor(row_factory=dict_row) as cursor:
        return cursor.execute(Q[name], params).fetchall()


def index_status(conn: psycopg.Connection) -> dict[str, Any]:
    """documents, chunks, failed, skipped, last_indexed_at."""
    return _row(conn, "index_status", _KINDS)


def queue_status(conn: psycopg.Connection) -> dict[str, Any]:
    """Jobs waiting (todo), running (doing) and failed, and since when the oldest has waited."""
    return _row(conn, "queue_status", {"queue": QUEUE})


def stalled_job_count(conn: psycopg.Connection, stalled_seconds: float) -> int:
    """Running jobs whose worker sent no heartbeat for `stalled_seconds`: the next worker runs them again."""
    return conn.execute(Q["stalled_job_count"], {"queue": QUEUE, "stalled_seconds": stalled_seconds}).fetchone()[0]


def roots(conn: psycopg.Connection) -> list[dict[str, Any]]:
    """Every root watched or with documents: name (None for a folder only indexed), path, files indexed
    without error, last_indexed_at, followed (a registered root), watched (a running watcher holds
    its lock now), and the watcher's watch_mode, watch_mode_since, watcher_seen_at (when one last said
    it watched it, or stopped), last_event_at (None where no watcher ever ran)."""
    return _rows(conn, "roots", {"watch_lock_prefix": WATCH_LOCK_PREFIX})


def failures(conn: psycopg.Connection, limit: int = 1000) -> list[dict[str, Any]]:
    """Files that could not be indexed: source_root, path, kind, error_stage, error."""
    return _rows(conn, "failures", {"limit": limit})


def health(conn: psycopg.Connection) -> dict[str, Any]:
    """last_indexed_at, queue_depth, documents; readable by the reader role."""
    return _row(conn, "health", {"queue": QUEUE, **_KINDS})


def memory_count(conn: psycopg.Connection, folder: Path) -> int:
    """Notes of the memory folder indexed without error that are memories (an id in their front matter)."""
    return conn.execute(Q["memory_count"], {"root": str(folder)}).fetchone()[0]


def report(
    conn: psycopg.Connection,
    settings: Settings,
    count_files: Callable[[Path], int] | None = None,
    memory_folder: Path | None = None,
    count_memories: Callable[[Path], int] | None = None,
    embedding_space: str | None = None,
    model_languages: frozenset[str] | None = None,
) -> dict[str, Any]:
    """Everything `pgrecall status` shows. `count_files(folder)` says how many files a root's
    folder holds (the worker's scan); without it, for a folder that is gone, or for one only
    indexed (not followed), `files` is None.
    With `memory_folder`, `memories` is {folder, count: the notes `count_memories(folder)` finds
    there (None without it; 0 for a folder not made yet), indexed: how many of them the index holds}.
    With `embedding_space` (this configuration's), `documents_to_reembed` counts the documents of others.
    `languages`: documents per language, each with whether the model reads it (`model_languages`, the
    card's, pgrecall.languages.model_card_languages: None reads every language; `simple`, no language
    told, always counts as read).
    `redactions`: the secrets replaced by a marker before indexing (see redactions())."""
    status = index_status(conn)
    status["queue"] = queue_status(conn) | {"stalled": stalled_job_count(conn, settings.stalled_seconds)}
    status["roots"] = []
    for root in roots(conn):
        folder = Path(root["path"])
        # A folder only indexed (files named on the command line) is no root: its other files are not missing.
        counted = count_files is not None and root["followed"] and folder.is_dir()
        files = count_files(folder) if counted else None
        status["roots"].append(
            {
                "name": root["name"],
                "path": root["path"],
                "indexed": root["indexed"],
                "archived": root["archived"],
                "archive_folder": root["archive_folder"],
                "files": files,
                "last_indexed_at": root["last_indexed_at"],
                "followed": root["followed"],
                "watched": root["watched"],
                "watch_mode": root["watch_mode"],
                "watch_mode_since": root["watch_mode_since"],
                "watcher_seen_at": root["watcher_seen_at"],
                "last_event_at": root["last_event_at"],
            }
        )
    if memory_folder is not None:
        count = None
        if count_memories is not None:
            count = count_memories(memory_folder) if memory_folder.is_dir() else 0
        status["memories"] = {
            "folder": str(memory_folder),
            "count": count,
            "indexed": memory_count(conn, memory_folder),
        }
    status["database"] = "embedded" if settings.embedded else "external"
    status["redactions"] = redactions(conn)
    status["embedding_spaces"] = embedding_spaces(conn)
    status["languages"] = [
        row | {"model_reads": model_languages is None or row["language"] in model_languages | {"simple"}}
        for row in _rows(conn, "document_languages")
    ]
    if embedding_space is not None:
        status["embedding_space"] = embedding_space
        status["documents_to_reembed"] = sum(
            s["documents"] for s in status["embedding_spaces"] if s["space"] != embedding_space
        )
    return status


def redactions(conn: psycopg.Connection) -> dict[str, Any]:
    """Secrets redacted before indexing: secrets, documents holding them, by_kind (kind -> secrets)."""
    totals = _row(conn, "redaction_totals")
    by_kind = {row["kind"]: row["secrets"] for row in _rows(conn, "redactions_by_kind")}
    return totals | {"by_kind": by_kind}


def embedding_spaces(conn: psycopg.Connection) -> list[dict[str, Any]]:
    """Per embedding space of the indexed vectors: space (None: not recorded), documents, chunks."""
    return _rows(conn, "embedding_spaces")


def models(conn: psycopg.Connection) -> list[dict[str, Any]]:
    """Per embedding space the index holds (`pgrecall models`): id, space, dimensions, created_at,
    documents, chunks, hnsw_index, hnsw_bytes; a last row with id None for documents whose space
    was never recorded."""
    return _rows(conn, "models")
