"""False positives of secret redaction, through the real index, and what redaction costs.

    .venv/bin/python bench/redaction_bench.py [--corpus ../shared/data/scifact] [--limit N] [--json]

Writes one Markdown note per SciFact abstract (title as heading) and copies examples/notes,
indexes both folders through the real pipeline (queue, workers, redaction on, as by default)
on a fresh embedded database, and counts from pgrecall.documents the documents with
redactions, by kind. Neither corpus holds a secret, so every redaction is a false positive:
each is printed with its context, found again in the file on disk (the index holds none of it).
Also times redaction alone over the parsed documents (the step's whole cost).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
DEFAULT_CORPUS = REPOSITORY.parent / "shared" / "data" / "scifact"
EXAMPLES = REPOSITORY / "examples" / "notes"
CONTEXT_CHARS = 40


def write_corpus(corpus: Path, folder: Path, limit: int | None) -> int:
    count = 0
    with open(corpus / "corpus.jsonl", encoding="utf-8") as lines:
        for line in lines:
            if limit is not None and count >= limit:
                break
            entry = json.loads(line)
            title = " ".join(entry.get("title", "").split()) or entry["_id"]
            (folder / f"{entry['_id']}.md").write_text(f"# {title}\n\n{entry['text']}\n", encoding="utf-8")
            count += 1
    return count


def contexts(path: Path) -> list[dict]:
    """What redaction replaces in one file: kind and context, from the file itself."""
    from pgrecall.worker.redaction import find_secrets

    text = path.read_text(encoding="utf-8")
    return [
        {
            "kind": finding.kind,
            "before": text[max(0, finding.start - CONTEXT_CHARS) : finding.start],
            "redacted": text[finding.start : finding.end],
            "after": text[finding.end : finding.end + CONTEXT_CHARS],
        }
        for finding in find_secrets(text)
    ]


def redaction_seconds(folders: list[Path]) -> tuple[float, int]:
    """Seconds redact_document takes over every parsed document of `folders`, and their characters."""
    from pgrecall.worker import adapters
    from pgrecall.worker.redaction import redact_document

    documents = [
        document
        for folder in folders
        for path in sorted(folder.rglob("*"))
        if path.is_file() and adapters.is_supported(path.name)
        for document in adapters.parse(path.name, path.read_bytes()).documents
    ]
    characters = sum(len(d.title) + sum(len(s.heading) + len(s.text) for s in d.sections) for d in documents)
    started = time.perf_counter()
    for document in documents:
        redact_document(document)
    return time.perf_counter() - started, characters


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--limit", type=int, default=None, help="only the first N abstracts")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="pgrecall-redaction-bench-"))
    os.environ["PGRECALL_HOME"] = str(work / "home")
    os.environ.pop("PGRECALL_DATABASE_URL", None)
    os.environ.pop("PGRECALL_REDACT_SECRETS", None)  # the default: on

    from pgrecall.logs import configure_logging
    from pgrecall.postgres import database
    from pgrecall.postgres.migrator import migrate
    from pgrecall.settings import load_settings
    from pgrecall.worker.run import run_index

    configure_logging()
    settings = load_settings()
    scifact = work / "scifact"
    scifact.mkdir()
    abstracts = write_corpus(args.corpus, scifact, args.limit)
    examples = work / "examples"
    shutil.copytree(EXAMPLES, examples)
    url = database.database_url(settings)
    try:
        with database.connect(url) as conn:
            migrate(conn)
        started = time.perf_counter()
        summary = asyncio.run(run_index(settings, url, [str(scifact), str(examples)]))
        index_seconds = time.perf_counter() - started
        result: dict = {"abstracts": abstracts, "index_seconds": round(index_seconds, 1), "corpora": {}}
        with database.connect(url) as conn:
            for name, folder in (("scifact", scifact), ("examples/notes", examples)):
                documents, redacted = conn.execute(
                    "SELECT count(*), count(*) FILTER (WHERE redactions <> '{}') FROM pgrecall.documents"
                    " WHERE source_root = %s AND error IS NULL",
                    (str(folder),),
                ).fetchone()
                paths = [
                    path
                    for (path,) in conn.execute(
                        "SELECT path FROM pgrecall.documents WHERE source_root = %s AND redactions <> '{}' ORDER BY path",
                        (str(folder),),
                    )
                ]
                result["corpora"][name] = {
                    "documents": documents,
                    "documents_redacted": redacted,
                    "false_positives": [{"path": p, "found": contexts(folder / p)} for p in paths],
                }
        result["indexed"] = dict(summary.statuses)
    finally:
        database.stop_embedded(settings)
    seconds, characters = redaction_seconds([scifact, examples])
    result["redaction_seconds"] = round(seconds, 2)
    result["redaction_mb_per_s"] = round(characters / seconds / 1e6, 1)
    shutil.rmtree(work, ignore_errors=True)

    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"indexed {result['indexed']} in {result['index_seconds']} s")
    for name, corpus in result["corpora"].items():
        print(f"{name}: {corpus['documents_redacted']} of {corpus['documents']} documents with redactions")
        for entry in corpus["false_positives"]:
            for found in entry["found"]:
                print(
                    f"  {entry['path']}: {found['kind']}: ...{found['before']}[{found['redacted']}]{found['after']}..."
                )
    print(
        f"redaction alone: {result['redaction_seconds']} s for every parsed document"
        f" ({result['redaction_mb_per_s']} M characters/s)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
