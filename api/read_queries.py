"""The search side's reads of the index: a pool of read-only connections and the queries of one search.

Rows leave this module as typed records built by column name (ChunkRow,
VectorHit, KeywordHit, Document), each SELECT naming exactly its record's
fields (tests/test_rows.py).
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import functools
import time
import weakref
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

import numpy as np
import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.rows import class_row, dict_row, scalar_row
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool, PoolTimeout

from pgrecall import bm25
from pgrecall.api import keyword, spaces, vector_effort
from pgrecall.contract import FILTER_FIELDS
from pgrecall.errors import DatabaseUnavailable, first_line
from pgrecall.postgres import database, queries
from pgrecall.terms import identifier_terms

_RAW = queries.load("search.sql")


class IndexNotSetUp(DatabaseUnavailable):
    """the index is not set up yet: run pgrecall index or serve first"""


def _expand(template: str, filtered: bool, chunk_id: str) -> str:
    joins = _RAW["filter_joins"].replace("{chunk_id}", chunk_id) if filtered else ""
    condition = _RAW["document_filter"] if filtered else "TRUE"
    return template.replace("{filter_joins}", joins).replace("{document_filter}", condition)


# Two plans per arm: without filters the arms never touch the documents table.
Q = {
    (name, filtered): _expand(_RAW[name], filtered, "p.chunk_id" if name == "keyword_postings" else "c.id")
    for name in ("vector_arm", "vector_arm_exact", "keyword_postings")
    for filtered in (False, True)
}


@functools.cache
def vector_arm_query(name: str, filtered: bool, space_id: int, dimensions: int) -> sql.Composed:
    """The vector arm (`name`: vector_arm or vector_arm_exact) of one embedding space: its id and width
    are constants of the text, as its partial HNSW index's expression and predicate are (0023)."""
    return sql.SQL(Q[(name, filtered)]).format(
        space_id=sql.Literal(int(space_id)), dimensions=sql.Literal(int(dimensions))
    )


@functools.cache
def filtered_rows_query(space_id: int) -> sql.Composed:
    """The plan (never run) of the chunks of one space the filters keep, for its estimate of their number."""
    return sql.SQL(_expand(_RAW["filtered_rows"], True, "c.id")).format(space_id=sql.Literal(int(space_id)))


QUERY_SPACES = _RAW["query_spaces"].replace("{embedding_spaces}", _RAW["embedding_spaces"])


# The arms' hits are named tuples rather than dataclasses: fusion, the evaluation and
# the benchmarks take them as (chunk id, score) pairs.
class VectorHit(NamedTuple):
    """A chunk the vector arm found (queries vector_arm, vector_arm_exact)."""

    chunk_id: int
    similarity: float  # cosine similarity with the query vector


class SpaceIndex(NamedTuple):
    """An embedding space the index holds, as the vector arm addresses it (from query query_spaces)."""

    id: int
    dimensions: int
    rows: float | None = None  # its chunks, as estimated without a count (None: not known yet)


class IndexedSpace(NamedTuple):
    """An embedding space of the indexed vectors, with its id and width where recorded (query query_spaces)."""

    space: str | None
    id: int | None
    dimensions: int | None
    rows: float | None  # the space's chunks as its HNSW index's statistics estimate them (None: not known)


class KeywordHit(NamedTuple):
    """A chunk the keyword arm found (query keyword_postings, ranked by pgrecall.api.keyword)."""

    chunk_id: int
    score: float  # its document's BM25 score


class ChunkRow(NamedTuple):
    """A hit's chunk with its document (query fetch_hits): a named tuple, as every search makes
    one per hit (class_row builds ten of them 0.06 ms sooner than frozen dataclasses)."""

    chunk_id: int
    document_id: int
    source_root: str
    path: str
    kind: str
    title: str | None
    heading: str
    text: str
    metadata: dict[str, Any]
    mtime: datetime.datetime | None
    project: str | None
    occurred_at: datetime.datetime | None
    similarity: float | None
    ordinal: int  # the chunk's place in its document
    keyword_words: bool  # a keyword match of it holds a word that is no stop word (pgrecall.api.passages)


class PassageChunk(NamedTuple):
    """A chunk of a passage joined from neighbouring hits (query passage_chunks)."""

    document_id: int
    ordinal: int
    text: str
    fresh_from: int | None  # text[:fresh_from] repeats the previous chunk's end; None: not recorded


class CandidateFacts(NamedTuple):
    """A fused candidate's document, as the ranking after fusion weighs it (query candidate_facts)."""

    chunk_id: int
    project: str | None
    occurred: float | None  # the document's own time, as a POSIX timestamp


@dataclasses.dataclass(frozen=True)
class RecentDocument:
    """A document by its own time (query recent_documents)."""

    document_id: int
    source_root: str
    path: str
    kind: str
    title: str | None
    project: str | None
    occurred_at: datetime.datetime
    memory_id: str | None  # the memory's id, for a note of the memory folder

    def to_json(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "occurred_at": self.occurred_at.isoformat()}


def recent(
    conn: psycopg.Connection, since: datetime.datetime, project: str | None, kind: str | None, limit: int
) -> list[RecentDocument]:
    """Documents whose own time is at or after `since`, newest first."""
    params = {"since": since, "project": project, "kind": kind, "limit": limit}
    with conn.cursor(row_factory=class_row(RecentDocument)) as cursor:
        return cursor.execute(_RAW["recent_documents"], params).fetchall()


def _configure_read_only(conn: psycopg.Connection) -> None:
    """Every transaction read-only, those psycopg begins (BEGIN READ ONLY) and those a statement
    outside one makes (`statements`), and, where the migration could create it, as the reader role."""
    conn.read_only = True
    database.configure_connection(conn)
    row = conn.execute(_RAW["reader_role_available"]).fetchone()
    if row and row[0]:
        conn.execute("SET ROLE pgrecall_reader")
    conn.execute("SET default_transaction_read_only = on")
    conn.commit()


@contextlib.contextmanager
def statements(conn: psycopg.Connection) -> Iterator[psycopg.Connection]:
    """`conn` (of a pool of open_pool) for statements each in a transaction of its own: no BEGIN and
    no COMMIT, two round trips of the four a keyword search took. Reads that need no one snapshot
    (under READ COMMITTED each statement takes its own anyway) run so, searches with a vector arm
    too: its HNSW settings are then the connection's, set once (ReadSession._set_hnsw). Read-only all
    the same: the pool's connections default every transaction to read-only."""
    conn.autocommit = True
    try:
        yield conn
    finally:
        conn.autocommit = False


def check_url(url: str) -> None:
    """One direct connection before the pool: a bad URL or a server that is down is
    reported at once, with its cause, instead of as a pool that never fills."""
    try:
        params = conninfo_to_dict(url)
    except psycopg.ProgrammingError as exc:
        raise DatabaseUnavailable(f"invalid connection string for the search database: {first_line(exc)}") from exc
    params.setdefault("connect_timeout", str(database.CONNECT_TIMEOUT_S))
    try:
        psycopg.connect(make_conninfo(**params)).close()
    except psycopg.Error as exc:
        raise DatabaseUnavailable(f"cannot connect to the search database: {first_line(exc)}") from exc


def require_index(conn: psycopg.Connection) -> None:
    """IndexNotSetUp unless a migration has created the tables searches read (searches never migrate)."""
    row = conn.execute(_RAW["index_is_set_up"]).fetchone()
    if not (row and row[0]):
        raise IndexNotSetUp()


# How long a search command waits for an index that is not there yet: commands started together
# on a fresh home (a search beside the index or serve that migrates) must not fail for the race.
INDEX_WAIT_S = 5.0
MIGRATION_WAIT_S = 60.0


def check_index(url: str, wait_s: float = INDEX_WAIT_S) -> None:
    """wait_for_index on a connection of its own, read-only (the index's database, before the reader
    logs in)."""
    with database.connect(url, read_only=True, autocommit=True, vectors=False) as conn:
        wait_for_index(conn, wait_s)


def wait_for_index(conn: psycopg.Connection, wait_s: float = INDEX_WAIT_S) -> None:
    """require_index on `conn` (autocommit). A migration under way is waited for; an index still missing
    after `wait_s` is IndexNotSetUp."""
    from pgrecall.postgres.locks import MIGRATION_LOCK_KEY as MIGRATION_LOCK  # the migrator's own lock

    deadline = time.monotonic() + wait_s
    conn.execute("SELECT set_config('lock_timeout', %s, false)", (f"{int(MIGRATION_WAIT_S * 1000)}ms",))
    while True:
        try:
            conn.execute(_RAW["wait_for_migration"], {"key": MIGRATION_LOCK})
        except psycopg.errors.LockNotAvailable:
            raise IndexNotSetUp(f"the index is still being set up after {MIGRATION_WAIT_S:.0f} s") from None
        try:
            require_index(conn)
            return
        except IndexNotSetUp:
            if time.monotonic() >= deadline:
                raise
        time.sleep(0.25)


def headlines(
    conn: psycopg.Connection, query: str, texts: Sequence[tuple[str, int]], start: str, stop: str
) -> list[str]:
    """Each (text, chunk id)'s text with the query's words between `start` and `stop`, in the chunk's language."""
    params = {
        "query": query,
        "texts": [text for text, _ in texts],
        "chunk_ids": [chunk_id for _, chunk_id in texts],
        "start": start,
        "stop": stop,
    }
    with conn.cursor(row_factory=scalar_row) as cursor:
        return cursor.execute(_RAW["headlines"], params).fetchall()


def open_pool(url: str, max_size: int = 4) -> ConnectionPool:
    check_url(url)
    pool = ConnectionPool(url, min_size=1, max_size=max_size, configure=_configure_read_only, open=False)
    try:
        pool.open(wait=True, timeout=30)
    except PoolTimeout as exc:
        pool.close()
        raise DatabaseUnavailable(f"the search database did not accept connections: {first_line(exc)}") from exc
    return pool


# The hnsw.ef_search each pooled connection holds for its session, where a search outside a transaction
# set it (ReadSession._set_hnsw). Nothing else on the search side's connections sets it for the session.
_CONNECTION_EF: weakref.WeakKeyDictionary[psycopg.Connection, int] = weakref.WeakKeyDictionary()


def _filter_values(filters: dict[str, Any] | None) -> dict[str, Any]:
    values: dict[str, Any] = {name: None for name in FILTER_FIELDS}
    for name, value in (filters or {}).items():
        values[name] = Jsonb(value) if name == "metadata" else value
    return values


class ReadSession:
    """Queries of one search, in one read-only transaction.

    vectors=False: a session without a vector arm (keyword mode) skips the HNSW settings, a
    round trip; its vector_arm refuses. exact_vectors=True: every vector arm is computed exactly,
    without the approximate index (evaluations: figures that do not depend on the graph's build).
    ef_search: PGRECALL_EF_SEARCH where set, for every vector arm of the session (set at once, as
    before the effort was chosen); None: each vector arm's effort is chosen for its space and the
    filters (pgrecall.api.vector_effort), its HNSW settings set just before it.
    """

    def __init__(
        self,
        conn: psycopg.Connection,
        filters: dict[str, Any] | None,
        ef_search: int | None,
        *,
        vectors: bool = True,
        exact_vectors: bool = False,
    ):
        self.conn = conn
        self.filtered = bool(filters)
        self.params = _filter_values(filters)
        self.vectors = vectors
        self.exact_vectors = exact_vectors
        self.ef_search = ef_search
        self._ef_set: int | None = None  # the hnsw.ef_search this transaction holds, where set here
        self._efforts: dict[tuple[int, int], vector_effort.Effort] = {}
        self._index_languages: list[str] | None = None
        if vectors and not exact_vectors and ef_search is not None:
            self._set_hnsw(ef_search)

    def _set_hnsw(self, ef_search: int) -> None:
        """The HNSW settings for the next vector arm: the transaction's, or, for statements outside one
        (store.statements), the connection's, which later searches on it find already set (no round trip)."""
        if self.conn.autocommit:
            if _CONNECTION_EF.get(self.conn) != ef_search:
                self.conn.execute(_RAW["hnsw_settings"], {"ef_search": str(ef_search), "local": False})
                _CONNECTION_EF[self.conn] = ef_search
        elif self._ef_set != ef_search:
            self.conn.execute(_RAW["hnsw_settings"], {"ef_search": str(ef_search), "local": True})
            self._ef_set = ef_search

    def selectivity(self, space: SpaceIndex) -> float:
        """The share of the space's chunks the filters keep, as the planner estimates it (1 without filters
        or where the space's size is not known)."""
        if not self.filtered or not space.rows:
            return 1.0
        (plan,) = self.conn.execute(filtered_rows_query(space.id), self.params).fetchone()
        return min(plan[0]["Plan"]["Plan Rows"] / space.rows, 1.0)

    def effort(self, space: SpaceIndex, limit: int) -> vector_effort.Effort:
        """The vector arm's effort in `space` for `limit` chunks (once per space and limit in a session)."""
        key = (space.id, limit)
        if key not in self._efforts:
            selectivity = 1.0 if self.ef_search is not None else self.selectivity(space)
            self._efforts[key] = vector_effort.choose_effort(space.rows, selectivity, limit, self.ef_search)
        return self._efforts[key]

    def embedding_spaces(self) -> list[str | None]:
        """The embedding spaces of the indexed vectors; None for vectors whose space was not recorded."""
        with self.conn.cursor(row_factory=scalar_row) as cursor:
            return cursor.execute(_RAW["embedding_spaces"]).fetchall()

    def query_space(self, space: str) -> SpaceIndex | None:
        """The space a query embedded in `space` is compared with; None when the index holds no
        vectors. EmbeddingSpaceMismatch when it holds vectors of other spaces only (api.spaces)."""
        with self.conn.cursor(row_factory=class_row(IndexedSpace)) as cursor:
            indexed = cursor.execute(QUERY_SPACES).fetchall()
        name = spaces.vector_arm_space([row.space for row in indexed], space)
        found = next((row for row in indexed if row.space == name and row.id is not None), None)
        return SpaceIndex(found.id, found.dimensions, found.rows) if found is not None else None

    def vector_arm(
        self, embedding: np.ndarray, limit: int, exact: bool = False, *, space: SpaceIndex | None
    ) -> list[VectorHit]:
        """The nearest chunks of `space`, nearest first, through its own HNSW index (or exactly);
        none when `space` is None (the index holds no vectors)."""
        if not self.vectors:
            raise RuntimeError("a session opened with vectors=False has no vector arm")
        if space is None:
            return []
        exact = exact or self.exact_vectors
        if len(embedding) != space.dimensions:
            raise ValueError(f"a query vector of {len(embedding)} dimensions for a space of {space.dimensions}")
        if not exact and self.ef_search is None:
            effort = self.effort(space, limit)
            exact = effort.exact
            if not exact:
                self._set_hnsw(effort.ef_search)
        query = vector_arm_query(
            "vector_arm_exact" if exact else "vector_arm", self.filtered, space.id, space.dimensions
        )
        params = {**self.params, "embedding": embedding, "limit": limit}
        with self.conn.cursor(row_factory=class_row(VectorHit)) as cursor:
            return cursor.execute(query, params).fetchall()

    def keyword_params(
        self, query: str, limit: int, depth: int, languages: Sequence[str] | None = None
    ) -> dict[str, Any]:
        """The keyword arm's parameters (the filters', the query's terms, BM25's)."""
        return {
            **self.params,
            "query": query,
            "identifiers": identifier_terms(query),
            "languages": list(languages) if languages is not None else None,
            "k1": bm25.K1,
            "b": bm25.B,
            "depth": depth,
            "limit": limit,
        }

    def keyword_arm(
        self, query: str, limit: int, depth: int, languages: Sequence[str] | None = None
    ) -> list[KeywordHit]:
        """The best documents' best chunks, best first. The query is analysed in every language
        the index holds, or in `languages` (text search configurations) where given."""
        params = self.keyword_params(query, limit, depth, languages)
        # Binary: the postings' arrays arrive as array_send wrote them, for numpy to read.
        with self.conn.cursor(binary=True, row_factory=class_row(keyword.TermRow)) as cursor:
            rows = cursor.execute(Q[("keyword_postings", self.filtered)], params).fetchall()
        postings = keyword.Postings.from_rows(rows)
        return [KeywordHit(chunk, score) for chunk, score in keyword.rank(postings, limit, bm25.K1, bm25.B)]

    def fetch(
        self,
        chunk_ids: Sequence[int],
        embedding: np.ndarray | None = None,
        space: SpaceIndex | None = None,
        query: str = "",
        stop_languages: Sequence[str] = (),
    ) -> dict[int, ChunkRow]:
        """chunk id -> its row, for the ids found, with its similarity to `embedding` (a vector of
        `space`) where given, for the chunks of that space, and whether a keyword match of `query`
        holds a word no stop word of `stop_languages` (configurations) where its language is `simple`."""
        params = {
            "chunk_ids": list(chunk_ids),
            "embedding": embedding,
            "space_id": space.id if space else None,
            "query": query,
            "identifiers": identifier_terms(query),
            "stop_languages": list(stop_languages),
        }
        with self.conn.cursor(row_factory=class_row(ChunkRow)) as cursor:
            rows = cursor.execute(_RAW["fetch_hits"], params).fetchall()
        return {row.chunk_id: row for row in rows}

    def passage_chunks(self, ranges: Sequence[tuple[int, int, int]]) -> list[PassageChunk]:
        """The chunks of each (document id, first ordinal, last ordinal), in document order."""
        params = {
            "document_ids": [document_id for document_id, _, _ in ranges],
            "firsts": [first for _, first, _ in ranges],
            "lasts": [last for _, _, last in ranges],
        }
        with self.conn.cursor(row_factory=class_row(PassageChunk)) as cursor:
            return cursor.execute(_RAW["passage_chunks"], params).fetchall()

    def index_languages(self) -> list[str]:
        """The languages (text search configurations) of the indexed documents (read once a session)."""
        if self._index_languages is None:
            with self.conn.cursor(row_factory=scalar_row) as cursor:
                self._index_languages = cursor.execute(_RAW["index_languages"]).fetchall()
        return self._index_languages

    def languages(self, chunk_ids: Sequence[int]) -> dict[int, str]:
        """chunk id -> its language, for fusion."""
        rows = self.conn.execute(_RAW["candidate_languages"], {"chunk_ids": list(chunk_ids)}).fetchall()
        return dict(rows)

    def facts(self, chunk_ids: Sequence[int]) -> dict[int, CandidateFacts]:
        """chunk id -> its document's project and own time, for the ranking after fusion."""
        with self.conn.cursor(row_factory=class_row(CandidateFacts)) as cursor:
            rows = cursor.execute(_RAW["candidate_facts"], {"chunk_ids": list(chunk_ids)}).fetchall()
        return {row.chunk_id: row for row in rows}


@dataclasses.dataclass(frozen=True)
class Document:
    id: int
    source_root: str
    path: str
    kind: str
    title: str | None
    metadata: dict[str, Any]
    mtime: datetime.datetime | None
    indexed_at: datetime.datetime | None
    error: str | None
    project: str | None
    occurred_at: datetime.datetime | None  # the document's own time (pgrecall.worker.document)
    chunks: list[dict[str, Any]]  # ordinal, heading, text, chunk_id

    @property
    def text(self) -> str:
        return "\n\n".join(chunk["text"] for chunk in self.chunks)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def document(conn: psycopg.Connection, id_or_path: int | str) -> Document | None:
    """A document and its chunks, by id or by path."""
    with conn.cursor(row_factory=dict_row) as cursor:
        if isinstance(id_or_path, int):
            fields = cursor.execute(_RAW["document_by_id"], {"id": id_or_path}).fetchone()
        else:
            fields = cursor.execute(_RAW["document_by_path"], {"path": id_or_path}).fetchone()
        if fields is None:
            return None
        del fields["chunk_count"]
        chunks = cursor.execute(_RAW["document_chunks"], {"id": fields["id"]}).fetchall()
    return Document(**fields, chunks=chunks)
