"""What language detection costs the write path: pgrecall.worker.language.document_language on every
document of a BEIR corpus (as the pipeline calls it: the note's text), timed alone.

    .venv/bin/python bench/language_cost.py ../shared/data/scifact ../shared/data/germanquad

Prints documents, the detected languages and the mean milliseconds per document; compare with the
indexing seconds per document `pgrecall eval` prints for the same corpus.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from pathlib import Path

from pgrecall.worker.language import document_language


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("datasets", type=Path, nargs="+")
    args = parser.parse_args()
    document_language({}, ["warm up: the model loads once per process"])
    for directory in args.datasets:
        texts = []
        with open(directory / "corpus.jsonl", encoding="utf-8") as lines:
            for line in lines:
                entry = json.loads(line)
                texts.append([entry.get("title") or "", entry.get("text") or ""])
        started = time.perf_counter()
        found = Counter(document_language({}, sections) for sections in texts)
        ms = (time.perf_counter() - started) * 1000 / len(texts)
        print(f"{directory.name}: {len(texts)} documents, {dict(found)}, {ms:.3f} ms per document")


if __name__ == "__main__":
    main()
