"""`pgrecall eval FILE.json`: conversational memory on a LoCoMo-format file, through the real pipeline.

Each conversation is written as the claude.ai export a user would hold (pgrecall.locomo), one
file per conversation in a folder of the eval's own, and indexed as `pgrecall index` indexes
it (queue, workers, the claude adapter, chunking, embedding) into a database of the eval's own,
kept between runs (unchanged files are not read again; --fresh drops it). Every question is
searched within its conversation (a path_prefix filter on its file) and, separately, across
all of them; the recalls come from the hits' texts (pgrecall.locomo.question_recall), and
passage@k from the passages a search for k serves (neighbouring hits joined, as the CLI, the
hooks and MCP give them; the floor, which only hides, left off).
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pgrecall import locomo
from pgrecall.composition.evaluation import MODES, ann_recall, eval_database_url, index_figures, percentile, safe_name
from pgrecall.settings import Settings

SCOPES = ("within", "across")  # the question's own conversation; every conversation at once
HITS = 100  # hits read per question: more than k x 23 words of turns need at the largest k


def write_exports(dataset: locomo.Dataset, folder: Path) -> dict[str, tuple[str, int]]:
    """One claude.ai conversations.json per conversation (rewritten only when it changed, so that
    an unchanged dataset is not indexed again); files of conversations no longer in the dataset
    are removed. Returns each session's document path -> (sample_id, session number)."""
    folder.mkdir(parents=True, exist_ok=True)
    documents: dict[str, tuple[str, int]] = {}
    written: set[str] = set()
    for conversation in dataset.conversations:
        name = conversation_file(conversation.sample_id)
        text = json.dumps(locomo.claude_export(conversation), ensure_ascii=False, indent=1) + "\n"
        path = folder / name
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
        written.add(name)
        for session in conversation.sessions:
            documents[f"{name}#{locomo.session_uuid(conversation.sample_id, session.number)}"] = (
                conversation.sample_id,
                session.number,
            )
    for stale in folder.glob("*.json"):
        if stale.name not in written:
            stale.unlink()
    return documents


def conversation_file(sample_id: str) -> str:
    return f"{safe_name(sample_id)}.json"


def hit_texts(hits, documents: dict[str, tuple[str, int]]) -> list[locomo.HitText]:
    texts = []
    for hit in hits:
        conversation, session = documents.get(hit.path, (None, None))
        texts.append(locomo.HitText(hit.text, conversation, session))
    return texts


def run_conversation_eval(
    settings: Settings,
    path: Path,
    fresh: bool = False,
    modes: list[str] | None = None,
    scopes: list[str] | None = None,
    progress: Callable[[str], None] | None = None,
    hnsw_recall: bool = False,
) -> dict[str, Any]:
    """The recalls of every mode in `modes` (default: all) and scope in `scopes` (default both),
    per category and overall. The vector arm ranks exactly, as in the BEIR eval."""
    from pgrecall.api.searcher import Searcher
    from pgrecall.embedders.embedding import embedder_for
    from pgrecall.worker.run import run_index

    say = progress or (lambda message: None)
    dataset = locomo.load(path.expanduser().resolve())
    folder = settings.home / "eval" / safe_name(dataset.name) / "conversations"
    documents = write_exports(dataset, folder)
    url = eval_database_url(settings, dataset.name, fresh)
    say(f"indexing {len(dataset.conversations)} conversations ({len(documents)} sessions) into its own database")
    indexing = index_figures(asyncio.run(run_index(settings, url, [str(folder)])), len(documents))
    turns = {c.sample_id: c.turns() for c in dataset.conversations}
    categories = [question.category for question in dataset.questions]
    embedder = embedder_for(settings)
    result: dict[str, Any] = {
        "dataset": dataset.name,
        "format": "locomo",
        "conversations": len(dataset.conversations),
        "sessions": len(documents),
        "turns": sum(len(t) for t in turns.values()),
        "questions": len(dataset.questions),
        "categories": {str(number): name for number, name in locomo.CATEGORIES.items()},
        "evidence": vars(dataset.evidence),
        "hits": HITS,
        "embedding": {"backend": embedder.backend, "space": embedder.space},
        "vector_search": "exact",
        "modes": {},
    }
    with Searcher(url, settings, embedder=embedder, pool_size=1, exact_vectors=True) as searcher:
        searcher.search("warm up", k=1)
        for label in modes or list(MODES):
            result["modes"][label] = {}
            for scope in scopes or SCOPES:
                say(f"searching: {label}, {scope}")
                recalls: list[dict[str, float]] = []
                latencies: list[float] = []
                for question in dataset.questions:
                    filters = {"path_prefix": conversation_file(question.conversation)} if scope == "within" else None
                    started = time.perf_counter()
                    hits = searcher.search(question.text, k=HITS, filters=filters, **MODES[label])
                    latencies.append((time.perf_counter() - started) * 1000)
                    texts = hit_texts(hits, documents)
                    # What the CLI, the hooks and MCP give for k: passages, neighbouring hits joined.
                    served = {
                        k: hit_texts(
                            searcher.search(question.text, k=k, filters=filters, merge=True, **MODES[label]),
                            documents,
                        )
                        for k in locomo.CUTOFFS
                    }
                    recalls.append(locomo.question_recall(question, turns[question.conversation], texts, served=served))
                figures: dict[str, Any] = locomo.aggregate(categories, recalls)
                figures["p50_ms"] = round(statistics.median(latencies), 1)
                figures["p95_ms"] = round(percentile(latencies, 95), 1)
                result["modes"][label][scope] = figures
        if hnsw_recall:
            say("measuring the HNSW index against exact search")
            result["ann_recall@10"] = ann_recall(searcher, [question.text for question in dataset.questions])
            result["ef_search"] = settings.ef_search if settings.ef_search is not None else "chosen per search"
    result["indexing"] = indexing
    return result


def format_table(result: dict[str, Any]) -> str:
    names = locomo.metric_names()
    evidence = result["evidence"]
    lines = [
        f"{result['dataset']} (LoCoMo: {result['conversations']} conversations, {result['sessions']} sessions, "
        f"{result['turns']} turns, {result['questions']} questions with evidence)",
        f"recall at k = {', '.join(map(str, locomo.CUTOFFS))}: budget (evidence turns within the first "
        f"k x {locomo.MEAN_TURN_WORDS} words of the hits), passage (the same, of the passages a search "
        "for k serves), turn (within the first k hits), session (evidence sessions among the first k hits')",
    ]
    for scope in SCOPES:
        rows = [(label, figures[scope]) for label, figures in result["modes"].items() if scope in figures]
        if not rows:
            continue
        lines.append("")
        lines.append(f"{scope} {'its conversation' if scope == 'within' else 'all conversations'}")
        lines.append(f"{'mode':<15}{'questions':<21}" + "".join(f"{n:>11}" for n in names) + f"{'p50_ms':>9}")
        for label, figures in rows:
            groups = [(group, values) for group, values in figures.items() if isinstance(values, dict)]
            for number, (group, values) in enumerate(groups):
                name = locomo.CATEGORIES.get(int(group), "") if group.isdigit() else ""
                group_label = f"{group} {name}".strip() + f" ({values['questions']})"
                latency = figures["p50_ms"] if number == 0 else ""
                lines.append(
                    (
                        f"{label:<15}{group_label:<21}"
                        + "".join(f"{values[n]:>11.3f}" for n in names)
                        + f"{latency:>9}"
                    ).rstrip()
                )
    lines.append("")
    lines.append(
        f"evidence ids: {evidence['ids']} kept; {evidence['split']} strings split, {evidence['repaired']} repaired; "
        f"skipped: {evidence['malformed']} malformed, {evidence['missing']} naming no turn, "
        f"{evidence['questions_without_evidence']} questions without evidence"
    )
    lines.append("vector arm: exact search (the HNSW index is not read)")
    if "ann_recall@10" in result:
        lines.append(
            f"HNSW recall@10 against exact search: {result['ann_recall@10']} (ef_search {result['ef_search']})"
        )
    lines.append(f"embedding: {result['embedding']['space']} (backend {result['embedding']['backend']})")
    ix = result["indexing"]
    lines.append(
        f"indexing: {ix['documents']} sessions, {ix['indexed']} files indexed, {ix['unchanged']} unchanged, "
        f"{ix['chunks']} chunks in {ix['seconds']} s ({ix['chunks_per_s']} chunks/s)"
    )
    return "\n".join(lines)
