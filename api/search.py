"""Hybrid search over the index: the public Python API.

    >>> from pgrecall.api import search
    >>> for hit in search("how do I rotate the signing keys?", k=5):
    ...     print(hit.score, hit.path, hit.heading)

Importing this module loads neither the worker nor the queue; the embedding
model loads once, on the first query that needs it.
"""

from __future__ import annotations

import atexit
import dataclasses
import datetime
import math
import re
import threading
from typing import Any

from pgrecall import database, kinds, status
from pgrecall.api import enrich, reader, store
from pgrecall.api.fuse import RankedList, reciprocal_rank_fusion
from pgrecall.api.store import Document
from pgrecall.embedding import Embedder, get_embedder
from pgrecall.errors import InvalidInput
from pgrecall.settings import Settings, load_settings

MODES = ("hybrid", "vector", "keyword")
FILTER_FIELDS = ("source_root", "root", "path_prefix", "kind", "metadata", "modified_since")
MAX_QUERY_CHARS = 2000
MAX_K = 1000
MAX_METADATA_DEPTH = 32
VARIANT_WEIGHT = 0.5  # a derived variant counts half as much as the query as typed
# Query enrichment is off by default: on SciFact it lowered
# hybrid nDCG@10 (0.705 against 0.723, `pgrecall eval`), so it is an option.


@dataclasses.dataclass(frozen=True)
class Hit:
    chunk_id: int
    document_id: int
    source_root: str
    path: str
    kind: str
    title: str | None
    heading: str
    text: str
    snippet: str
    score: float
    ranks: dict[str, int | None]
    metadata: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def check_text(value: str, field: str) -> str:
    """Text PostgreSQL can store: no NUL character, nothing UTF-8 cannot encode."""
    if "\x00" in value:
        raise InvalidInput(f"{field} must not contain a NUL character (\\u0000)")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput(f"{field} is not valid Unicode (an unpaired surrogate)") from None
    return value


def check_json(value: Any, field: str, depth: int = 0, top: str | None = None) -> Any:
    """A JSON value PostgreSQL's jsonb takes: finite numbers, text without NUL, bounded nesting."""
    top = top or field
    if depth > MAX_METADATA_DEPTH:
        raise InvalidInput(f"{top} is nested deeper than {MAX_METADATA_DEPTH} levels")
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidInput(f"{field} must hold finite numbers, not {value!r}")
        return value
    if isinstance(value, str):
        return check_text(value, field)
    if isinstance(value, list | tuple):
        return [check_json(item, f"{field}[{at}]", depth + 1, top) for at, item in enumerate(value)]
    if isinstance(value, dict):
        clean = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise InvalidInput(f"{field} keys must be strings, got {key!r}")
            check_text(key, f"{field} key {key!r}")
            clean[key] = check_json(item, f"{field}.{key}", depth + 1, top)
        return clean
    raise InvalidInput(f"{field} must hold JSON values, not {type(value).__name__}")


def validate_filters(filters: dict[str, Any] | None) -> dict[str, Any]:
    if not filters:
        return {}
    if not isinstance(filters, dict):
        raise InvalidInput("filters must be a mapping of field to value")
    unknown = sorted(str(name) for name in set(filters) - set(FILTER_FIELDS))
    if unknown:
        raise InvalidInput(f"unknown filter field {unknown[0]!r}; known: {', '.join(FILTER_FIELDS)}")
    clean: dict[str, Any] = {}
    for name, value in filters.items():
        if value is None:
            continue
        if name == "metadata":
            if not isinstance(value, dict):
                raise InvalidInput("filter metadata must be a mapping of key to value")
            value = check_json(value, "filter metadata")
        elif name == "modified_since":
            value = _parse_time(value)
        elif not isinstance(value, str) or not value:
            raise InvalidInput(f"filter {name} must be a non-empty string")
        else:
            value = check_text(value, f"filter {name}")
            if name == "kind" and value not in kinds.SEARCHABLE:
                raise InvalidInput(f"unknown kind {value!r}; use one of {', '.join(kinds.SEARCHABLE)}")
        clean[name] = value
    return clean


def _parse_time(value: Any) -> datetime.datetime:
    if isinstance(value, datetime.datetime):
        parsed = value
    elif isinstance(value, datetime.date):
        parsed = datetime.datetime.combine(value, datetime.time())
    elif isinstance(value, str):
        try:
            parsed = datetime.datetime.fromisoformat(value)
        except ValueError:
            raise InvalidInput(f"modified_since must be an ISO date or time, got {value!r}") from None
    else:
        raise InvalidInput("modified_since must be an ISO date or time")
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=datetime.UTC)


_WORDS = re.compile(r"\w+")


def make_snippet(text: str, query: str, width: int = 240) -> str:
    """About `width` characters of `text` around the first query word it contains."""
    flat = " ".join(text.split())
    if len(flat) <= width:
        return flat
    lowered = flat.lower()
    positions = [lowered.find(w.lower()) for w in _WORDS.findall(query) if len(w) > 2]
    found = [p for p in positions if p >= 0]
    start = max(0, min(found) - width // 4) if found else 0
    start = flat.rfind(" ", 0, start) + 1 if start else 0
    end = start + width
    if end >= len(flat):  # the window reaches the end of the text: nothing to cut, no word lost
        return ("…" if start else "") + flat[start:]
    excerpt = flat[start:end] if flat[end] == " " else flat[start:end].rsplit(" ", 1)[0]
    return ("…" if start else "") + excerpt + "…"


def _variant_weight(position: int) -> float:
    return 1.0 if position == 0 else VARIANT_WEIGHT


class Searcher:
    """A pool of read-only connections and the query embedder; safe to share between threads."""

    def __init__(self, url: str, settings: Settings, embedder: Embedder | None = None, pool_size: int = 4):
        self.settings = settings
        self.pool = store.open_pool(url, max_size=pool_size)
        self.embedder = embedder or get_embedder(settings.model, settings.embed_batch_size)

    def close(self) -> None:
        self.pool.close()

    def __enter__(self) -> Searcher:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def get_document(self, id_or_path: int | str) -> Document | None:
        """A document with its chunks, by id or by path (absolute, or relative to its root)."""
        if isinstance(id_or_path, str) and id_or_path.isdigit():
            id_or_path = int(id_or_path)
        if isinstance(id_or_path, str):
            if not id_or_path.strip():
                raise InvalidInput("the document path is empty")
            check_text(id_or_path, "the document path")
        with self.pool.connection() as conn, conn.transaction():
            return store.document(conn, id_or_path)

    def health(self) -> dict[str, Any]:
        with self.pool.connection() as conn, conn.transaction():
            return status.health(conn)

    def search(
        self,
        query: str,
        k: int = 10,
        filters: dict[str, Any] | None = None,
        mode: str = "hybrid",
        enrich_query: bool = False,
        keyword_depth: int = 1000,
    ) -> list[Hit]:
        query = (query or "").strip()
        if not query:
            raise InvalidInput("the query is empty")
        check_text(query, "the query")
        if len(query) > MAX_QUERY_CHARS:
            raise InvalidInput(f"the query is longer than {MAX_QUERY_CHARS} characters")
        if mode not in MODES:
            raise InvalidInput(f"unknown mode {mode!r}; use one of {', '.join(MODES)}")
        if not isinstance(k, int) or not 1 <= k <= MAX_K:
            raise InvalidInput(f"k must be an integer from 1 to {MAX_K}")
        clean_filters = validate_filters(filters)
        limit = max(k, 100)  # candidates per arm

        variants = [query]
        if enrich_query:
            variants = enrich.query_variants(query, self.embedder.word_pieces)
        vectors = self.embedder.embed_batch(variants) if mode in ("hybrid", "vector") else None

        lists: list[RankedList] = []
        with self.pool.connection() as conn, conn.transaction():
            session = store.ReadSession(conn, clean_filters, ef_search=max(self.settings.ef_search, limit))
            # Keyword lists go first: fusion breaks exact ties by first appearance, so
            # lexical evidence wins them (E-4711 against its near-twin E-4712, which a
            # dense model cannot tell apart).
            for position, variant in enumerate(variants):
                if mode in ("hybrid", "keyword"):
                    ids = session.keyword_arm(variant, limit, keyword_depth)
                    lists.append(RankedList("keyword", ids, _variant_weight(position)))
            for position in range(len(variants)):
                if vectors is not None:
                    ids = session.vector_arm(vectors[position], limit)
                    lists.append(RankedList("vector", ids, _variant_weight(position)))
            fused = reciprocal_rank_fusion(lists, k=self.settings.rrf_k, arms=("vector", "keyword"))[:k]
            rows = session.fetch([f.id for f in fused])
        return [
            Hit(
                chunk_id=row.chunk_id,
                document_id=row.document_id,
                source_root=row.source_root,
                path=row.path,
                kind=row.kind,
                title=row.title,
                heading=row.heading,
                text=row.text,
                snippet=make_snippet(row.text, query),
                score=f.score,
                ranks=f.ranks,
                metadata=row.metadata,
            )
            for f in fused
            if (row := rows.get(f.id)) is not None
        ]


def search_url(settings: Settings) -> str:
    """Where searches read: PGRECALL_SEARCH_DATABASE_URL (a replica) as given, else the
    index's database, logged in as the reader role where it can (pgrecall.api.reader)."""
    if settings.search_database_url:
        return settings.search_database_url
    return reader.search_login(settings, database.database_url(settings))


_default: Searcher | None = None
_default_lock = threading.Lock()


def default_searcher() -> Searcher:
    global _default
    with _default_lock:
        if _default is None:
            settings = load_settings()
            _default = Searcher(search_url(settings), settings)
            # Its pool's threads and connections end with the interpreter, closed
            # in order rather than collected half-way through the shutdown.
            atexit.unregister(close_default_searcher)
            atexit.register(close_default_searcher)
        return _default


def close_default_searcher() -> None:
    """Close the searcher of search() and get_document(); the next call opens a new one."""
    global _default
    with _default_lock:
        searcher, _default = _default, None
    if searcher is not None:
        searcher.close()


def search(
    query: str, k: int = 10, filters: dict[str, Any] | None = None, mode: str = "hybrid", enrich: bool = False
) -> list[Hit]:
    """Hybrid search of the index configured by PGRECALL_* variables; see Searcher.search."""
    return default_searcher().search(query, k=k, filters=filters, mode=mode, enrich_query=enrich)


def get_document(id_or_path: int | str) -> Document | None:
    """A document and its chunks, by id or path; None when there is none."""
    return default_searcher().get_document(id_or_path)
