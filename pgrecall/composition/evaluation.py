"""`pgrecall eval`: retrieval quality on a BEIR-format dataset, through the real pipeline.

Every corpus entry becomes a Markdown note (its title as the heading) in a
folder of the eval's own, indexed into a database of the eval's own through
the queue, workers, chunking and embedding; every query goes through the real
search module. A document's score is its best chunk's. Metrics come from
ir-measures (trec_eval's implementations).
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pgrecall.errors import InvalidInput
from pgrecall.postgres import database
from pgrecall.postgres.migrator import migrate
from pgrecall.settings import Settings

# "hybrid" fuses as PGRECALL_FUSION says (the default); "hybrid:rrf" and "hybrid:convex" name
# the fusion, so one run measures both on the same index and arms.
MODES: dict[str, dict[str, Any]] = {
    "vector": {"mode": "vector", "enrich_query": False},
    "keyword": {"mode": "keyword", "enrich_query": False},
    "hybrid": {"mode": "hybrid", "enrich_query": False},
    "hybrid:rrf": {"mode": "hybrid", "enrich_query": False, "fusion": "rrf"},
    "hybrid:convex": {"mode": "hybrid", "enrich_query": False, "fusion": "convex"},
    "hybrid+enrich": {"mode": "hybrid", "enrich_query": True},
}
DEPTH = 100  # documents ranked per query: Recall@100 needs them
# A search for k <= 100 hits fuses 100 candidates per arm, so every such search
# shares one ranking: the @10 metrics and latencies are measured on it. Recall@100
# needs 100 documents, more than 100 chunks hold, so it is measured on a deeper
# search (300 chunks, 300 candidates per arm).
SHALLOW_K = 100
DEEP_K = 3 * DEPTH


@dataclasses.dataclass(frozen=True)
class Dataset:
    name: str
    corpus: Path
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]


def load_dataset(directory: Path, split: str = "test") -> Dataset:
    directory = directory.expanduser().resolve()
    corpus = directory / "corpus.jsonl"
    qrels_file = directory / "qrels" / f"{split}.tsv"
    for required in (corpus, directory / "queries.jsonl", qrels_file):
        if not required.is_file():
            raise InvalidInput(f"not a BEIR dataset: {required} is missing")
    qrels: dict[str, dict[str, int]] = {}
    with open(qrels_file, encoding="utf-8") as lines:
        for number, line in enumerate(lines):
            fields = line.rstrip("\n").split("\t")
            if number == 0 and not fields[-1].lstrip("-").isdigit():
                continue  # header
            if len(fields) < 3:
                continue
            qrels.setdefault(fields[0], {})[fields[1]] = int(fields[2])
    queries: dict[str, str] = {}
    with open(directory / "queries.jsonl", encoding="utf-8") as lines:
        for line in lines:
            entry = json.loads(line)
            if entry["_id"] in qrels:
                queries[entry["_id"]] = entry["text"]
    if not queries:
        raise InvalidInput(f"no queries of split {split!r} have judgments")
    return Dataset(directory.name, corpus, queries, qrels)


def safe_name(corpus_id: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in corpus_id)


def write_notes(dataset: Dataset, folder: Path) -> dict[str, str]:
    """One note per corpus entry; returns note path -> corpus id."""
    folder.mkdir(parents=True, exist_ok=True)
    mapping: dict[str, str] = {}
    with open(dataset.corpus, encoding="utf-8") as lines:
        for line in lines:
            entry = json.loads(line)
            corpus_id = str(entry["_id"])
            name = f"{safe_name(corpus_id)}.md"
            title = " ".join((entry.get("title") or "").split())
            text = f"# {title}\n\n{entry.get('text', '')}\n" if title else f"{entry.get('text', '')}\n"
            path = folder / name
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                path.write_text(text, encoding="utf-8")
            mapping[name] = corpus_id
    return mapping


def eval_database_name(dataset_name: str) -> str:
    """The database `pgrecall eval` indexes a dataset into (bench/web_bench.py --eval serves it)."""
    return f"pgrecall_eval_{safe_name(dataset_name).lower()}"[:63]


def eval_database_url(settings: Settings, dataset: Dataset | str, fresh: bool) -> str:
    """A database of the eval's own on the configured server, never the user's index
    (`dataset`: a BEIR dataset, or a dataset's name)."""
    name = dataset if isinstance(dataset, str) else dataset.name
    url = database.database_url(settings)
    eval_url = database.ensure_database(url, eval_database_name(name), fresh=fresh)
    with database.connect(eval_url) as conn:
        migrate(conn, provision_reader=False)  # the index keeps the reader role's password
    return eval_url


def index_figures(summary, documents: int) -> dict[str, Any]:
    """What an eval's indexing run did, for its report (an IndexSummary of pgrecall.worker.run)."""
    return {
        "documents": documents,
        "indexed": summary.statuses.get("indexed", 0),
        "unchanged": summary.statuses.get("unchanged", 0),
        "chunks": summary.chunks,
        "seconds": round(summary.seconds, 1),
        "chunks_per_s": round(summary.chunks_per_second, 1),
    }


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def document_run(hits, mapping: dict[str, str], depth: int = DEPTH) -> dict[str, float]:
    """Best chunk per document, first `depth` documents, scores strictly decreasing by rank."""
    ranked: list[str] = []
    for hit in hits:
        corpus_id = mapping.get(hit.path)
        if corpus_id is not None and corpus_id not in ranked:
            ranked.append(corpus_id)
        if len(ranked) >= depth:
            break
    return {corpus_id: float(depth - rank) for rank, corpus_id in enumerate(ranked)}


def rankings_digest(run: dict[str, dict[str, float]]) -> str:
    """A short digest of every query's ranked documents, in order: two evals that rank alike give
    the same one, whatever their latencies."""
    ranked = {query_id: sorted(scores, key=lambda corpus_id: -scores[corpus_id]) for query_id, scores in run.items()}
    return hashlib.sha256(json.dumps(ranked, sort_keys=True).encode()).hexdigest()[:16]


def ir_metrics(qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]]) -> dict[str, float]:
    import ir_measures
    from ir_measures import RR, R, nDCG

    measures = {"ndcg@10": nDCG @ 10, "recall@10": R @ 10, "recall@100": R @ 100, "mrr@10": RR @ 10}
    aggregate = ir_measures.calc_aggregate(list(measures.values()), qrels, run)
    return {name: round(float(aggregate[measure]), 4) for name, measure in measures.items()}


def run_eval(
    settings: Settings,
    directory: Path,
    split: str = "test",
    fresh: bool = False,
    modes: list[str] | None = None,
    progress: Callable[[str], None] | None = None,
    hnsw_recall: bool = False,
) -> dict[str, Any]:
    """The figures of every mode in `modes` (default: all). The vector arm ranks exactly, never
    through the HNSW graph: a graph's recall depends on the order it was built in, so two fresh
    evals of the same data would differ by it. hnsw_recall: also the graph's recall@10 against
    exact search (ann_recall@10), the cost the approximate index adds to every search."""
    from pgrecall.api.searcher import Searcher
    from pgrecall.embedders.embedding import embedder_for
    from pgrecall.worker.run import run_index

    say = progress or (lambda message: None)
    dataset = load_dataset(directory, split)
    folder = settings.home / "eval" / safe_name(dataset.name) / "notes"
    mapping = write_notes(dataset, folder)
    url = eval_database_url(settings, dataset, fresh)
    say(f"indexing {len(mapping)} notes of {dataset.name} into its own database")
    indexing = index_figures(asyncio.run(run_index(settings, url, [str(folder)])), len(mapping))
    embedder = embedder_for(settings)
    result: dict[str, Any] = {
        "dataset": dataset.name,
        "split": split,
        "queries": len(dataset.queries),
        "embedding": {"backend": embedder.backend, "space": embedder.space},
        "vector_search": "exact",
        "modes": {},
    }
    with Searcher(url, settings, embedder=embedder, pool_size=1, exact_vectors=True) as searcher:
        searcher.search("warm up", k=1)
        for label in modes or list(MODES):
            say(f"searching: {label}")
            run: dict[str, dict[str, float]] = {}
            deep_run: dict[str, dict[str, float]] = {}
            latencies: list[float] = []
            for query_id, query in dataset.queries.items():
                started = time.perf_counter()
                hits = searcher.search(query, k=SHALLOW_K, **MODES[label])
                latencies.append((time.perf_counter() - started) * 1000)
                run[query_id] = document_run(hits, mapping)
                deep_run[query_id] = document_run(searcher.search(query, k=DEEP_K, **MODES[label]), mapping)
            metrics = ir_metrics(dataset.qrels, run)
            metrics["recall@100"] = ir_metrics(dataset.qrels, deep_run)["recall@100"]
            metrics["rankings"] = rankings_digest(run)
            metrics["p50_ms"] = round(statistics.median(latencies), 1)
            metrics["p95_ms"] = round(percentile(latencies, 95), 1)
            result["modes"][label] = metrics
        if hnsw_recall:
            say("measuring the HNSW index against exact search")
            result["ann_recall@10"] = ann_recall(searcher, list(dataset.queries.values()))
            result["ef_search"] = settings.ef_search if settings.ef_search is not None else "chosen per search"
    result["indexing"] = indexing
    return result


def _nearest(searcher, vectors, k: int, exact: bool) -> list[list[int]]:
    """Each vector's top k chunks through the HNSW arm, or exactly."""
    from pgrecall.api import read_queries as store

    with searcher.pool.connection() as conn, conn.transaction():
        session = store.ReadSession(conn, None, ef_search=searcher.settings.ef_search)
        space = session.query_space(searcher.embedder.space)
        # As many candidates as a search asks (pgrecall.api.search), of which the first k: the effort is the search's.
        return [
            [chunk_id for chunk_id, _ in session.vector_arm(vector, max(k, 100), exact=exact, space=space)[:k]]
            for vector in vectors
        ]


def exact_neighbours(searcher, queries: list[str], k: int = 10) -> list[list[int]]:
    """Each query's exact top k chunks (no HNSW index), the yardstick of ann_recall."""
    return _nearest(searcher, searcher.embedder.embed_queries(queries), k, exact=True)


def ann_recall(searcher, queries: list[str], k: int = 10, exact: list[list[int]] | None = None) -> float:
    """Mean overlap of the HNSW arm's top k chunks with exact search's top k (`exact`: those of
    exact_neighbours, computed once for several settings of the same index)."""
    vectors = searcher.embedder.embed_queries(queries)
    if exact is None:
        exact = _nearest(searcher, vectors, k, exact=True)
    approximate = _nearest(searcher, vectors, k, exact=False)
    # Of the exact top k that exist: an index of fewer than k chunks is not short of recall.
    overlaps = [
        len(set(found) & set(nearest)) / max(len(nearest), 1) for found, nearest in zip(approximate, exact, strict=True)
    ]
    return round(statistics.fmean(overlaps), 4)


def format_table(result: dict[str, Any]) -> str:
    columns = ("ndcg@10", "recall@10", "recall@100", "mrr@10", "p50_ms", "p95_ms")
    lines = [
        f"{result['dataset']} ({result['split']}, {result['queries']} queries)",
        f"{'mode':<15}" + "".join(f"{c:>11}" for c in columns),
    ]
    for label, metrics in result["modes"].items():
        lines.append(f"{label:<15}" + "".join(f"{metrics[c]:>11}" for c in columns))
    lines.append("vector arm: exact search (the HNSW index is not read)")
    if "ann_recall@10" in result:
        lines.append(
            f"HNSW recall@10 against exact search: {result['ann_recall@10']} (ef_search {result['ef_search']})"
        )
    if "embedding" in result:
        lines.append(f"embedding: {result['embedding']['space']} (backend {result['embedding']['backend']})")
    ix = result["indexing"]
    lines.append(
        f"indexing: {ix['documents']} documents, {ix['indexed']} indexed, {ix['unchanged']} unchanged, "
        f"{ix['chunks']} chunks in {ix['seconds']} s ({ix['chunks_per_s']} chunks/s)"
    )
    return "\n".join(lines)
