"""Fusion with and without the keyword-only rule for languages the model does not cover (issue 21, item 4).

On the database `pgrecall eval DATASET` indexed (same PGRECALL_HOME; nothing is indexed again),
runs the hybrid modes twice in one process: as search does (a document in a language the
embedding model's card does not name is judged by the keyword arm alone, pgrecall.api.fuse), and
with every language counted as covered (both arms for every document, as before issue 21).

    PGRECALL_HOME=... .venv/bin/python bench/fusion_languages.py ../shared/data/germanquad [--both]

Without --both only the second run (the first is what `pgrecall eval` prints for hybrid).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from pgrecall.composition.evaluation import format_table, run_eval
from pgrecall.settings import load_settings

MODES = ["keyword", "hybrid", "hybrid:rrf"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--split", default="test")
    parser.add_argument("--both", action="store_true", help="also run the hybrid modes as search does")
    args = parser.parse_args()
    settings = load_settings()
    if args.both:
        print("== keyword-only for languages the model does not cover (search as it is)")
        print(format_table(run_eval(settings, args.dataset, split=args.split, modes=MODES)))
    from pgrecall.api import searcher as search

    real = search.model_card_languages
    search.model_card_languages = lambda path: None  # every language covered: both arms for all
    try:
        print("== every language counted as covered (fusion before issue 21)")
        print(format_table(run_eval(settings, args.dataset, split=args.split, modes=MODES[1:])))
    finally:
        search.model_card_languages = real


if __name__ == "__main__":
    main()
