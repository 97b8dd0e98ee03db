"""Raw embedding throughput of each backend on the same texts, and how close each is to torch.

    .venv/bin/python bench/backend_bench.py [--corpus ../shared/data/scifact] [--documents 500] [--repeats 1]

Splits the first N SciFact abstracts (title + text) into chunks of about 60 words,
embeds them all with torch, onnx and onnx-int8 at PGRECALL_EMBED_BATCH, and prints
JSON: chunks/s per backend, the ratio to torch and to the int8 file run batch-wide
("onnx-int8-batched": PGRECALL_EMBED_BATCH texts per pass, one activation scale over
all of them, as onnx-int8 ran before each text ran alone), min/mean cosine to torch's
vectors, and how far a text's vector in the batch is from the one it gets alone
(largest component difference over the first 40 chunks). With --repeats N each
backend embeds the texts N times, the backends taking turns, and the median rate
counts: on a shared machine the load moves between one backend's turn and the next. Also the one-off export + quantize time (on a fresh temporary home) and
each backend's cold start (a new process, files present: time to the first vector,
and whether it imported torch). Ratios measured in one run are what to compare.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import structlog

from pgrecall.embedders.embedding import BACKENDS, new_embedder
from pgrecall.embedders.onnx_embedder import OnnxInt8Embedder
from pgrecall.settings import load_settings

DEFAULT_CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "scifact"
WORDS = 60
BATCHED = "onnx-int8-batched"


class BatchWideInt8(OnnxInt8Embedder):
    """The int8 file as onnx-int8 ran it before: batch_size texts per pass, sharing its scales."""

    texts_per_run = None
    parallel_runs = 1


def make(backend: str, batch_size: int, home: Path):
    if backend == BATCHED:
        return BatchWideInt8(batch_size=batch_size, home=home)
    return new_embedder(batch_size=batch_size, backend=backend, home=home)


COLD = """
import sys, time
started = time.perf_counter()
from pgrecall.embedders.embedding import new_embedder
new_embedder(backend=sys.argv[1]).embed_batch(["warm"])
print(round(time.perf_counter() - started, 2), "torch" in sys.modules)
"""


def chunks(corpus: Path, documents: int) -> list[str]:
    texts = []
    with open(corpus / "corpus.jsonl", encoding="utf-8") as lines:
        for number, line in enumerate(lines):
            if number >= documents:
                break
            entry = json.loads(line)
            words = f"{entry.get('title', '')} {entry['text']}".split()
            texts += [" ".join(words[start : start + WORDS]) for start in range(0, len(words), WORDS)]
    return texts


def cold_start(backend: str, home: Path) -> dict:
    env = {"PGRECALL_HOME": str(home), "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", COLD, backend], env=env, capture_output=True, text=True, check=True)
    seconds, imported = out.stdout.split()
    return {"first_vector_s": float(seconds), "imports_torch": imported == "True"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--documents", type=int, default=500)
    parser.add_argument("--repeats", type=int, default=1, help="timed passes per backend, taking turns")
    args = parser.parse_args()
    structlog.configure(logger_factory=structlog.PrintLoggerFactory(sys.stderr))  # stdout is the JSON
    settings = load_settings()
    texts = chunks(args.corpus, args.documents)
    result: dict = {"chunks": len(texts), "batch_size": settings.embed_batch_size, "backends": {}}
    with tempfile.TemporaryDirectory(prefix="pgrecall-backend-bench-") as directory:
        home = Path(directory)
        started = time.perf_counter()
        new_embedder(backend="onnx", home=home).load()
        result["export_s"] = round(time.perf_counter() - started, 1)
        started = time.perf_counter()
        new_embedder(backend="onnx-int8", home=home).load()
        result["quantize_s"] = round(time.perf_counter() - started, 1)
        names = (*BACKENDS, BATCHED)
        embedders = {backend: make(backend, settings.embed_batch_size, home).load() for backend in names}
        seconds: dict[str, list[float]] = {backend: [] for backend in names}
        vectors = {}
        for _ in range(args.repeats):
            for backend, embedder in embedders.items():
                embedder.embed_batch(texts[:8])  # not timed
                started = time.perf_counter()
                vectors[backend] = embedder.embed_batch(texts)
                seconds[backend].append(time.perf_counter() - started)
        for backend, embedder in embedders.items():
            cosines = (vectors[backend] * vectors["torch"]).sum(axis=1)
            alone = np.vstack([embedder.embed_batch([text]) for text in texts[:40]])
            result["backends"][backend] = {
                "space": embedder.space,
                "chunks_per_s": round(len(texts) / statistics.median(seconds[backend]), 1),
                "chunks_per_s_each": [round(len(texts) / s, 1) for s in seconds[backend]],
                "cosine_to_torch_min": round(float(np.min(cosines)), 4),
                "cosine_to_torch_mean": round(float(np.mean(cosines)), 5),
                "batch_vs_alone_max_abs": float(np.abs(vectors[backend][:40] - alone).max()),
            }
        torch_rate = result["backends"]["torch"]["chunks_per_s"]
        batched_rate = result["backends"][BATCHED]["chunks_per_s"]
        for numbers in result["backends"].values():
            numbers["ratio_to_torch"] = round(numbers["chunks_per_s"] / torch_rate, 2)
            numbers["ratio_to_int8_batched"] = round(numbers["chunks_per_s"] / batched_rate, 2)
        for backend in BACKENDS:
            result["backends"][backend]["cold"] = cold_start(backend, home)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
