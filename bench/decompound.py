"""German compounds split (issue 21, item 3): does a decompounding step help the keyword arm?

Writes a copy of a BEIR dataset (GermanQuAD) in which every German compound of the corpus and of
the queries is followed by its parts, as a decompounding step before PostgreSQL's German
configuration would give them ("Zählerstand" -> "Zählerstand Zähler Stand"), split by CharSplit's
n-gram model (package compound-split, a measurement dependency only: not in pyproject). Then:

    .venv/bin/python bench/decompound.py ../shared/data/germanquad /tmp/germanquad-decompound
    .venv/bin/pgrecall eval /tmp/germanquad-decompound --fresh --mode keyword

and compare with `pgrecall eval ../shared/data/germanquad --fresh --mode keyword`.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
from pathlib import Path

MIN_LENGTH = 8  # shorter words are rarely compounds
MIN_SCORE = 0.7  # CharSplit's score of the best split: below, mostly wrong splits ("Tom" + "Aten")
_WORD = re.compile(r"\b[A-ZÄÖÜ][a-zäöüß]{" + str(MIN_LENGTH - 1) + r",}\b")


def parts(word: str, depth: int = 2) -> list[str]:
    from compound_split import char_split

    if depth == 0 or len(word) < MIN_LENGTH:
        return []
    score, head, tail = char_split.split_compound(word)[0]
    if score < MIN_SCORE or head == word:
        return []
    return [head, tail, *parts(head, depth - 1), *parts(tail, depth - 1)]


def decompound(text: str) -> str:
    return _WORD.sub(lambda m: " ".join([m.group(), *parts(m.group())]), text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path)
    parser.add_argument("target", type=Path)
    args = parser.parse_args()
    args.target.mkdir(parents=True, exist_ok=True)
    shutil.copytree(args.source / "qrels", args.target / "qrels", dirs_exist_ok=True)
    split = 0
    for name, fields in (("corpus.jsonl", ("title", "text")), ("queries.jsonl", ("text",))):
        with (
            open(args.source / name, encoding="utf-8") as lines,
            open(args.target / name, "w", encoding="utf-8") as out,
        ):
            for line in lines:
                entry = json.loads(line)
                for field in fields:
                    if entry.get(field):
                        new = decompound(entry[field])
                        split += new != entry[field]
                        entry[field] = new
                out.write(json.dumps(entry, ensure_ascii=False) + "\n")
    print(f"{args.target}: {split} fields with compounds split")


if __name__ == "__main__":
    main()
