"""The evaluation sets the benchmarks read, where they are on this machine; never downloaded.

The folder holding them is given by flag (`--data`), else by PGRECALL_BENCH_DATA, else it is
`../shared/data` beside the checkout (or beside the folder of worktrees that holds it). A small
run reads a cut of a BEIR set (`cut`): a few of its judged queries, their relevant documents and
the corpus's first documents, written as a BEIR folder of its own.
"""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

DATA_VARIABLE = "PGRECALL_BENCH_DATA"
REPO = Path(__file__).resolve().parents[2]
CORPORA = {
    "scifact": "BEIR SciFact: 5,183 English abstracts, 300 test claims (English, relevance judged)",
    "germanquad": "BEIR GermanQuAD: German passages and questions",
    "xquad-de-en": "XQuAD German and English paragraphs; de-to-en and en-to-de cross-language splits",
    "locomo-dev": "LoCoMo's development conversations (memory questions over long chats)",
}


class MissingCorpus(SystemExit):
    """A corpus the benchmarks need is not on this machine (they never download one)."""


def data_root(given: str | Path | None = None) -> Path:
    """The folder that holds the corpora: `given`, PGRECALL_BENCH_DATA, or a `shared/data` above the checkout."""
    if given or os.environ.get(DATA_VARIABLE):
        return Path(given or os.environ[DATA_VARIABLE]).expanduser().resolve()
    for folder in REPO.parents:
        if (folder / "shared" / "data").is_dir():
            return folder / "shared" / "data"
    raise MissingCorpus(f"no corpora: give --data DIR or {DATA_VARIABLE} (the folder holding scifact/, ...)")


def corpus(name: str, root: Path) -> Path:
    """The folder of corpus `name` under `root`; MissingCorpus when it is not there."""
    folder = root / name
    if not folder.is_dir():
        raise MissingCorpus(f"{folder}: no such corpus (known: {', '.join(CORPORA)}); corpora are never downloaded")
    return folder


def read_jsonl(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def read_qrels(path: Path) -> list[tuple[str, str, str]]:
    with open(path, encoding="utf-8", newline="") as rows:
        reader = csv.reader(rows, delimiter="\t")
        next(reader)
        return [(row[0], row[1], row[2]) for row in reader if row]


def cut(source: Path, target: Path, documents: int, queries: int, split: str = "test") -> Path:
    """A BEIR folder at `target` of the first `queries` judged queries of `source`'s split, their
    relevant documents, and `source`'s first documents up to `documents` in all (made once)."""
    if (target / "corpus.jsonl").is_file():
        return target
    judged = read_qrels(source / "qrels" / f"{split}.tsv")
    kept_queries: list[str] = []
    for query, _, _ in judged:
        if query not in kept_queries and len(kept_queries) < queries:
            kept_queries.append(query)
    relevant = {document for query, document, _ in judged if query in kept_queries}
    corpus_rows = read_jsonl(source / "corpus.jsonl")
    kept = [row for row in corpus_rows if row["_id"] in relevant]
    kept += [row for row in corpus_rows if row["_id"] not in relevant][: max(documents - len(kept), 0)]
    (target / "qrels").mkdir(parents=True, exist_ok=True)
    write_jsonl(target / "corpus.jsonl", kept)
    write_jsonl(
        target / "queries.jsonl", [row for row in read_jsonl(source / "queries.jsonl") if row["_id"] in kept_queries]
    )
    with open(target / "qrels" / f"{split}.tsv", "w", encoding="utf-8", newline="") as rows:
        writer = csv.writer(rows, delimiter="\t", lineterminator="\n")
        writer.writerow(["query-id", "corpus-id", "score"])
        writer.writerows(row for row in judged if row[0] in kept_queries)
    return target


def write_jsonl(path: Path, rows: list[dict]) -> None:
    with open(path, "w", encoding="utf-8") as lines:
        lines.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
