"""One bilingual BEIR dataset from two: GermanQuAD's passages and questions beside SciFact's (issue 21).

Both corpora in one index, both sets of queries with their own judgments (ids prefixed "de-" and
"en-"), so `pgrecall eval` measures each language's queries in an index that holds the other
language too: queries analysed in every indexed language, fusion with documents the embedding
model covers (English) and does not (German).

    .venv/bin/python bench/mixed_dataset.py ../shared/data/germanquad ../shared/data/scifact /tmp/mixed
    .venv/bin/pgrecall eval /tmp/mixed --fresh
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("german", type=Path)
    parser.add_argument("english", type=Path)
    parser.add_argument("target", type=Path)
    parser.add_argument("--split", default="test")
    args = parser.parse_args()
    (args.target / "qrels").mkdir(parents=True, exist_ok=True)
    with (
        open(args.target / "corpus.jsonl", "w", encoding="utf-8") as corpus,
        open(args.target / "queries.jsonl", "w", encoding="utf-8") as queries,
        open(args.target / "qrels" / f"{args.split}.tsv", "w", encoding="utf-8") as qrels,
    ):
        qrels.write("query-id\tcorpus-id\tscore\n")
        for prefix, source in (("de-", args.german), ("en-", args.english)):
            for name, out in (("corpus.jsonl", corpus), ("queries.jsonl", queries)):
                with open(source / name, encoding="utf-8") as lines:
                    for line in lines:
                        entry = json.loads(line)
                        entry["_id"] = prefix + str(entry["_id"])
                        out.write(json.dumps(entry, ensure_ascii=False) + "\n")
            for number, line in enumerate((source / "qrels" / f"{args.split}.tsv").read_text().splitlines()):
                fields = line.split("\t")
                if number == 0 and not fields[-1].lstrip("-").isdigit():
                    continue
                qrels.write(f"{prefix}{fields[0]}\t{prefix}{fields[1]}\t{fields[2]}\n")
    print(args.target)


if __name__ == "__main__":
    main()
