"""Hybrid search over the index: the public Python API.

    >>> from pgrecall.api import search
    >>> for hit in search("how do I rotate the signing keys?", k=5):
    ...     print(hit.score, hit.path, hit.heading)

Importing this module loads neither the worker nor the queue; the embedding
model loads once, on the first query that needs it.
"""

from __future__ import annotations

import atexit
import re
import threading
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any, Protocol

from pgrecall import contract, status
from pgrecall.api import enrich, passages, reader
from pgrecall.api import read_queries as store
from pgrecall.api.fuse import (
    Facts,
    Fused,
    RankedList,
    convex_fusion,
    exact_ties,
    project_boost,
    reciprocal_rank_fusion,
    rerank,
)
from pgrecall.api.read_queries import Document
from pgrecall.contract import (  # noqa: F401 (re-exported: the names this module always had)
    FILTER_FIELDS,
    MAX_INTERNAL_K,
    MAX_K,
    MAX_QUERY_CHARS,
    MODES,
    Hit,
    SearchRequest,
    check_json,
    check_text,
    search_request,
    validate_filters,
)
from pgrecall.embedders.embedding import Embedder, embedder_for
from pgrecall.errors import InvalidInput
from pgrecall.language_detection import detect
from pgrecall.languages import CONFIGURATIONS, SIMPLE, model_card_languages, parse_languages
from pgrecall.postgres import database
from pgrecall.settings import Settings, load_settings

# Candidates past k read so that passages joined or hidden leave no empty place (at least this many).
REFILL = 10
VARIANT_WEIGHT = 0.5  # a derived variant counts half as much as the query as typed
# Query enrichment is off by default: on SciFact it lowered
# hybrid nDCG@10 (0.705 against 0.723 under RRF, `pgrecall eval`), so it is an option.
# Fusion (pgrecall.api.fuse) defaults to convex: on SciFact it lifted hybrid nDCG@10 from
# 0.7228 (RRF) to 0.7448 with alpha 0.5, and every identifier test still ranks its note first.


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


def _ranked(arm: str, scored: list[tuple[int, float]], weight: float) -> RankedList:
    """An arm's (chunk id, score) pairs, best first, as a list to fuse."""
    return RankedList(arm, [chunk_id for chunk_id, _ in scored], weight, [score for _, score in scored])


def _keyword_arms(session: store.ReadSession, variants: list[str], limit: int, depth: int) -> list[RankedList]:
    """The keyword arm of each query variant, as lists to fuse."""
    return [
        _ranked("keyword", session.keyword_arm(variant, limit, depth), _variant_weight(position))
        for position, variant in enumerate(variants)
    ]


class IndexReader(Protocol):
    """What the MCP tools read the index with: a Searcher in-process, or pgrecall.cli.warm.WarmSearcher,
    which asks serve's warm socket first (pgrecall.api.warm_server answers each method with a Searcher).
    A method a tool calls is here, so that neither can lack it (tests/unit/test_warm_client.py)."""

    def run(self, request: SearchRequest) -> list[Hit]: ...

    def get_document(self, id_or_path: int | str) -> Document | None: ...

    def recent(self, request: contract.RecentRequest) -> list[store.RecentDocument]: ...


class Searcher:
    """A pool of read-only connections and the query embedder; safe to share between threads."""

    def __init__(
        self,
        url: str,
        settings: Settings,
        embedder: Embedder | None = None,
        pool_size: int = 4,
        exact_vectors: bool = False,
    ):
        """exact_vectors: the vector arm ranks every chunk of the space exactly instead of reading
        the HNSW graph, whose build order (and so recall) may differ between two builds of the
        same data; `pgrecall eval` searches so, for figures that repeat.

        pool_size: connections for concurrent searches. From 2 up, a hybrid search runs its keyword
        arm on a connection of a second pool, as large, while the query is embedded and the vector
        arm runs on the first: the search takes about the longer of the two instead of their sum.
        The keyword arms' pool is apart so that a search holding one connection never waits for
        another from the same pool, which concurrent searches could exhaust. With 1 (a command that
        runs one search and exits) the arms run in turn on one connection, with no second login."""
        self.settings = settings
        self.exact_vectors = exact_vectors
        self.pool = store.open_pool(url, max_size=pool_size)
        self.keyword_pool = None
        self._keyword_threads: ThreadPoolExecutor | None = None
        try:
            with self.pool.connection() as conn, conn.transaction():
                store.require_index(conn)  # searches never migrate: an index never set up is one line
            if pool_size >= 2:
                self.keyword_pool = store.open_pool(url, max_size=pool_size)
                self._keyword_threads = ThreadPoolExecutor(pool_size, thread_name_prefix="pgrecall-keyword-arm")
        except BaseException:
            self.close()
            raise
        # Loaded on the first query that needs vectors: keyword searches never load a model.
        self.embedder = embedder or embedder_for(settings)
        # The languages its model card names (None: not known, every language counts as covered).
        model_path = getattr(self.embedder, "model_path", None)
        self.covered_languages = model_card_languages(model_path) if model_path is not None else None
        self.languages = parse_languages(settings.languages)  # a query's language is told among them
        # The stop words a keyword match of a chunk analysed as `simple` must hold more than (the floor).
        self.stop_languages = [CONFIGURATIONS[code] for code in self.languages]

    def close(self) -> None:
        if self._keyword_threads is not None:
            self._keyword_threads.shutdown(wait=True)
        if self.keyword_pool is not None:
            self.keyword_pool.close()
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

    def headlines(self, query: str, texts: Sequence[tuple[str, int]], start: str, stop: str) -> list[str]:
        """Each (text, chunk id)'s text with the query's words between `start` and `stop`, as the
        keyword arm reads them in the chunk's language (store.headlines)."""
        if not texts:
            return []
        with self.pool.connection() as conn, conn.transaction():
            return store.headlines(conn, query, texts, start, stop)

    def recent(self, request: contract.RecentRequest) -> list[store.RecentDocument]:
        """Documents by their own time, newest first, for a request built by contract.recent_request."""
        with self.pool.connection() as conn, conn.transaction():
            return store.recent(conn, request.since, request.project, request.kind, request.limit)

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
        fusion: str | None = None,
        project: str | None = None,
        merge: bool = False,
        floor: bool = False,
    ) -> list[Hit]:
        """The engine's entry: validated as every interface is, but k up to MAX_INTERNAL_K
        (evaluations rank deeper than any interface may ask; pgrecall.contract).
        fusion: "rrf" or "convex"; None for the PGRECALL_FUSION setting. project: the project
        searched from, whose documents rank first at equal relevance (not a filter). merge and
        floor: off, unlike every interface's default, so that evaluations measure the ranking
        itself, each chunk in its place (pgrecall.api.passages)."""
        request = search_request(
            query,
            k=k,
            mode=mode,
            enrich=enrich_query,
            filters=filters,
            fusion=fusion,
            project=project,
            merge=merge,
            floor=floor,
            max_k=MAX_INTERNAL_K,
        )
        return self.run(request, keyword_depth=keyword_depth)

    def _unjudged(
        self, session: store.ReadSession, query: str, lists: list[RankedList]
    ) -> tuple[frozenset[int], frozenset[int]]:
        """The candidates one arm cannot judge (pgrecall.api.fuse): (keyword-only, vector-only).

        Keyword-only, the vector arm's: those in a language the embedding model does not cover, or
        every one when the query is in such a language (a cosine between texts the model cannot
        read is no evidence, whichever side it cannot read). Vector-only, the keyword arm's: those
        in a language the model covers other than the query's, when the query's is covered too (a
        question shares few words with a note in another language, so the keyword arm not finding
        it says nothing). Candidates' languages are looked up only where either can be: the index
        holds a language the model does not cover, or the model covers several and the index holds
        one other than the query's. `simple` (no language told, or a query too short to tell) is
        never another language."""
        covered = self.covered_languages
        multilingual = covered is None or len(covered) > 1
        indexed = set(session.index_languages()) - {SIMPLE}
        uncovered = indexed - covered if covered is not None else set()
        if not uncovered and not multilingual:
            return frozenset(), frozenset()
        candidates = {chunk_id for ranked in lists for chunk_id in ranked.ids}
        query_language = detect(query, self.languages)
        if query_language != SIMPLE and covered is not None and query_language not in covered:
            return frozenset(candidates), frozenset()
        if not uncovered and (query_language == SIMPLE or indexed <= {query_language}):
            return frozenset(), frozenset()
        languages = session.languages(candidates)
        keyword_only = frozenset(chunk_id for chunk_id, language in languages.items() if language in uncovered)
        if query_language == SIMPLE:
            return keyword_only, frozenset()
        vector_only = frozenset(
            chunk_id
            for chunk_id, language in languages.items()
            if language not in (SIMPLE, query_language) and language not in uncovered
        )
        return keyword_only, vector_only

    def run(self, request: SearchRequest, keyword_depth: int = 1000) -> list[Hit]:
        """Search for a request built by pgrecall.contract.search_request."""
        query, k, mode = request.query, request.k, request.mode
        fusion = request.fusion or self.settings.fusion
        limit = max(k, 100)  # candidates per arm

        variants = [query]
        if request.enrich:
            variants = enrich.query_variants(query, self.embedder.word_pieces)
        beside: Future[list[RankedList]] | None = None
        if mode == "hybrid" and self._keyword_threads is not None:
            beside = self._keyword_threads.submit(self._keyword_lists, request, variants, limit, keyword_depth)
        try:
            return self._run(request, variants, limit, keyword_depth, fusion, beside)
        finally:
            # A search that failed first never leaves its keyword arm holding a connection behind it.
            if beside is not None and not beside.cancel():
                wait([beside])

    def _keyword_lists(
        self, request: SearchRequest, variants: list[str], limit: int, keyword_depth: int
    ) -> list[RankedList]:
        """The keyword arm of every variant, read-only, on a connection of the keyword pool (store.statements)."""
        assert self.keyword_pool is not None
        with self.keyword_pool.connection() as conn, store.statements(conn):
            session = store.ReadSession(conn, request.filters, ef_search=0, vectors=False)
            return _keyword_arms(session, variants, limit, keyword_depth)

    def _run(
        self,
        request: SearchRequest,
        variants: list[str],
        limit: int,
        keyword_depth: int,
        fusion: str,
        beside: Future[list[RankedList]] | None,
    ) -> list[Hit]:
        query, k, mode = request.query, request.k, request.mode
        vectors = self.embedder.embed_queries(variants) if mode in ("hybrid", "vector") else None

        lists: list[RankedList] = []
        # No BEGIN and COMMIT: no read needs one snapshot, and the HNSW settings are the connection's.
        with self.pool.connection() as conn, store.statements(conn):
            session = store.ReadSession(
                conn,
                request.filters,
                ef_search=None if self.settings.ef_search is None else max(self.settings.ef_search, limit),
                vectors=vectors is not None,
                exact_vectors=self.exact_vectors,
            )
            space = None
            if vectors is not None:  # never compare vectors of two embedding spaces
                space = session.query_space(self.embedder.space)
            # Keyword lists go first: fusion breaks exact ties by first appearance, so
            # lexical evidence wins them (E-4711 against its near-twin E-4712, which a
            # dense model cannot tell apart).
            vector_lists = [
                _ranked("vector", session.vector_arm(vectors[position], limit, space=space), _variant_weight(position))
                for position in range(len(variants) if vectors is not None else 0)
            ]
            if beside is not None:
                lists.extend(beside.result())
            elif mode in ("hybrid", "keyword"):
                lists.extend(_keyword_arms(session, variants, limit, keyword_depth))
            lists.extend(vector_lists)
            arms = ("vector", "keyword")
            keyword_only, vector_only = (
                self._unjudged(session, query, lists) if mode == "hybrid" else (frozenset(), frozenset())
            )
            if fusion == "convex":
                fused = convex_fusion(
                    lists, self.settings.fusion_alpha, arms, keyword_only=keyword_only, vector_only=vector_only
                )
            else:
                fused = reciprocal_rank_fusion(
                    lists, self.settings.rrf_k, arms, keyword_only=keyword_only, vector_only=vector_only
                )
            # The project searched from, and recency between exact ties: only what can move into
            # (or within) the k hits reads facts.
            weighed = [f.id for f in fused] if request.project is not None else exact_ties(fused, within=k)
            if weighed:
                facts = {chunk_id: Facts(row.project, row.occurred) for chunk_id, row in session.facts(weighed).items()}
                boost = project_boost(fusion, self.settings.rrf_k)
                fused = rerank(fused, facts, request.project, boost)
            # Joined or hidden hits leave places that further candidates fill (pgrecall.api.passages):
            # read in steps, each twice as deep, until k passages or no candidate is left.
            depth = k + max(k, REFILL) if request.merge or request.floor else k
            found: list[tuple[Fused, store.ChunkRow]] = []
            read = 0
            while True:
                batch = fused[read:depth]
                rows = session.fetch(
                    [f.id for f in batch],
                    vectors[0] if vectors is not None else None,
                    space,
                    query=query,
                    stop_languages=self.stop_languages,
                )
                found.extend((f, row) for f in batch if (row := rows.get(f.id)) is not None)
                read = depth
                chosen = self._passages(found, request)
                if len(chosen) >= k or depth >= len(fused):
                    break
                depth *= 2
            chosen = chosen[:k]
            ranges = [
                (found[group[0]][1].document_id, found[group[0]][1].ordinal, found[group[-1]][1].ordinal)
                for group in chosen
                if len(group) > 1
            ]
            between = session.passage_chunks(ranges) if ranges else []
        texts: dict[tuple[int, int], tuple[str, int | None]] = {
            (chunk.document_id, chunk.ordinal): (chunk.text, chunk.fresh_from) for chunk in between
        }
        return [_passage_hit(found, group, texts, query) for group in chosen]

    def _passages(self, found: list[tuple[Fused, store.ChunkRow]], request: SearchRequest) -> list[list[int]]:
        """The candidates' positions as passages, best first: joined where `request.merge`, only
        candidates an arm vouches for where `request.floor` (pgrecall.api.passages)."""
        floor = self.settings.hook_min_score
        shown = (
            [passages.vouched(f.ranks, row.similarity, row.keyword_words, floor) for f, row in found]
            if request.floor
            else None
        )
        return passages.groups([row for _, row in found], request.merge, limit=request.k, shown=shown)


def _passage_hit(
    found: list[tuple[Fused, store.ChunkRow]],
    group: list[int],
    texts: dict[tuple[int, int], tuple[str, int | None]],
    query: str,
) -> Hit:
    """The hit of a passage: `group`, its candidates' positions in `found` (best first) in document
    order. The best ranked gives its id, score and place; each arm's best rank and score, and the best
    similarity, are the passage's; its text runs from its first chunk to its last. A passage of one
    chunk is that chunk's hit, as before passages."""
    fused, row = found[min(group)]
    members = [found[position] for position in group]
    text, ranks, arm_scores, similarity = row.text, fused.ranks, fused.arm_scores, row.similarity
    if len(members) > 1:
        first, last = members[0][1].ordinal, members[-1][1].ordinal
        chunks = [texts[key] for ordinal in range(first, last + 1) if (key := (row.document_id, ordinal)) in texts]
        text = passages.joined_text(chunks) if chunks else "\n\n".join(r.text for _, r in members)
        ranks = passages.best_ranks([f.ranks for f, _ in members])
        arm_scores = passages.best_arm_scores([f.arm_scores for f, _ in members])
        similarity = max((r.similarity for _, r in members if r.similarity is not None), default=None)
    return Hit(
        chunk_id=row.chunk_id,
        document_id=row.document_id,
        source_root=row.source_root,
        path=row.path,
        kind=row.kind,
        title=row.title,
        heading=members[0][1].heading,
        text=text,
        snippet=make_snippet(text, query),
        score=fused.score,
        ranks=ranks,
        metadata=row.metadata,
        modified=row.mtime,
        arm_scores=arm_scores,
        project=row.project,
        occurred_at=row.occurred_at,
        similarity=similarity,
        chunk_ids=tuple(r.chunk_id for _, r in members),
    )


def search_url(settings: Settings) -> str:
    """Where searches read: PGRECALL_SEARCH_DATABASE_URL (a replica) as given, else the
    index's database, logged in as the reader role where it can (pgrecall.api.reader)."""
    if settings.search_database_url:
        return settings.search_database_url
    url = database.database_url(settings)  # starts the embedded server if needed; never migrates
    with database.connect(url, read_only=True, autocommit=True, vectors=False) as conn:
        store.wait_for_index(conn)  # before the reader's login, which a migration sets up
        return reader.search_login(settings, url, conn)


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
    query: str,
    k: int = 10,
    filters: dict[str, Any] | None = None,
    mode: str = "hybrid",
    enrich: bool = False,
    fusion: str | None = None,
    project: str | None = None,
    merge: bool = True,
    floor: bool = True,
) -> list[Hit]:
    """Hybrid search of the index configured by PGRECALL_* variables: k from 1 to MAX_K (100),
    validated as every interface is (pgrecall.contract.search_request). fusion: "rrf" or
    "convex" (pgrecall.api.fuse); None for the PGRECALL_FUSION setting. filters: see
    pgrecall.contract.FILTERS (project, since and before among them). project: the project
    searched from (a folder, normalised to its git top-level, or a name): its documents rank
    above other projects' at equal relevance; documents of other projects and of none stay found.
    merge: hits of one document within a chunk of each other joined into one passage; floor: only
    hits an arm vouches for (pgrecall.api.passages); as every interface gives them by default."""
    # Validated before any connection.
    request = search_request(
        query, k=k, mode=mode, enrich=enrich, filters=filters, fusion=fusion, project=project, merge=merge, floor=floor
    )
    return default_searcher().run(request)


def get_document(id_or_path: int | str) -> Document | None:
    """A document and its chunks, by id or path; None when there is none."""
    return default_searcher().get_document(id_or_path)


def recent(
    project: str | None = None,
    days: int = contract.DEFAULT_RECENT_DAYS,
    kind: str | None = None,
    limit: int = contract.DEFAULT_RECENT_LIMIT,
) -> list[store.RecentDocument]:
    """What was remembered or discussed lately: documents by their own time, newest first
    (pgrecall.contract.recent_request validates the arguments)."""
    return default_searcher().recent(contract.recent_request(project=project, days=days, kind=kind, limit=limit))
