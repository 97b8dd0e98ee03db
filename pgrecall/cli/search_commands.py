"""`pgrecall search`: hybrid search of the index, printed or as JSON."""

from __future__ import annotations

import argparse
import json
import os

from pgrecall import kinds, warm_client
from pgrecall.cli.common import command, key_values, load_model_early, searcher
from pgrecall.contract import MODES, TIME_FORMS
from pgrecall.settings import FUSIONS, Settings


def add_parser(commands: argparse._SubParsersAction) -> None:
    search = command(
        commands,
        "search",
        run,
        help="hybrid search of the index",
        epilog='examples: pgrecall search "postgres vacuum settings" -k 5 --json\n'
        '          pgrecall search "what did we decide about retries" --here --since 7d\n'
        "          pgrecall search E-4711 --project ~/work/apollo --before 2026-11-01",
    )
    search.add_argument("query")
    search.add_argument("-k", type=int, default=10, help="number of hits, 1 to 100 (default: 10)")
    search.add_argument("--mode", choices=MODES, default="hybrid")
    search.add_argument(
        "--fusion",
        choices=FUSIONS,
        help="how the arms are fused: rrf (Reciprocal Rank Fusion) or convex (normalised scores) "
        "(default: PGRECALL_FUSION)",
    )
    enrichment = search.add_mutually_exclusive_group()
    enrichment.add_argument(
        "--enrich",
        dest="enrich",
        action="store_true",
        default=False,
        help="also search key-term variants of the query (WordPiece enrichment)",
    )
    enrichment.add_argument(
        "--no-enrich", dest="enrich", action="store_false", help="search only the query as typed (default)"
    )
    search.add_argument("--path-prefix", help="only paths starting with this (relative, or absolute)")
    search.add_argument("--kind", help=f"only documents of this kind ({', '.join(kinds.SEARCHABLE)})")
    search.add_argument("--root", help="only documents of this root: its name (from serve/watch) or its absolute path")
    search.add_argument(
        "--project", help="only this project's documents: its folder (taken to its git top-level) or its name"
    )
    context = search.add_mutually_exclusive_group()
    context.add_argument(
        "--prefer",
        metavar="PROJECT",
        help="rank this project's documents first at equal relevance (others stay found)",
    )
    context.add_argument("--here", action="store_true", help="--prefer the project of the current folder")
    search.add_argument(
        "--since",
        help="only documents from then on, by their own time (a memory's creation, a conversation's last "
        f"message, else the file's modification): {TIME_FORMS}",
    )
    search.add_argument("--before", help=f"only documents from before then, by their own time: {TIME_FORMS}")
    search.add_argument("--modified-since", help="only files modified since this ISO date")
    search.add_argument(
        "--meta", action="append", default=[], metavar="KEY=VALUE", help="front-matter filter, repeatable"
    )
    search.add_argument(
        "--no-merge",
        dest="merge",
        action="store_false",
        help="each chunk a hit of its own (default: hits of one document within a chunk of each other are "
        "one passage, their text joined)",
    )
    search.add_argument(
        "--all",
        dest="floor",
        action="store_false",
        help="every hit as ranked (default: only hits whose keyword match holds a word no stop word, or "
        "whose similarity with the query is at least PGRECALL_HOOK_MIN_SCORE)",
    )
    search.add_argument("--json", action="store_true", help="print one JSON array of hits")
    search.set_defaults(lazy_logging=True)  # answered over the warm socket, it logs nothing


def filters_of(args: argparse.Namespace) -> dict:
    filters: dict = {}
    if args.path_prefix:
        filters["path_prefix"] = args.path_prefix
    if args.kind:
        filters["kind"] = args.kind
    if args.root:
        filters["source_root" if args.root.startswith("/") else "root"] = args.root
    if args.project:
        filters["project"] = args.project
    if args.since:
        filters["since"] = args.since
    if args.before:
        filters["before"] = args.before
    if args.modified_since:
        filters["modified_since"] = args.modified_since
    if args.meta:
        filters["metadata"] = key_values(args.meta)
    return filters


def preferred_project(args: argparse.Namespace) -> str | None:
    return os.getcwd() if args.here else args.prefer


def run(args: argparse.Namespace, settings: Settings) -> int:
    from pgrecall.contract import search_request

    # Validated as every interface does (pgrecall.contract), before any connection.
    request = search_request(
        args.query,
        k=args.k,
        mode=args.mode,
        enrich=args.enrich,
        filters=filters_of(args),
        fusion=args.fusion,
        project=preferred_project(args),
        merge=args.merge,
        floor=args.floor,
    )
    hits = warm_client.search(request, settings)  # serve's loaded model, when it runs
    if hits is None:
        loading = load_model_early(settings) if request.mode != "keyword" else None
        try:
            args.start_logging()
            index = searcher(settings, pool_size=1)
            try:
                hits = index.run(request)
            finally:
                index.close()
        finally:
            if loading is not None:
                loading.join()
    if args.json:
        print(json.dumps([hit.to_json() for hit in hits], ensure_ascii=False))
    else:
        print_hits(hits)
    return 0


def print_hits(hits: list) -> None:
    """Each hit with its similarity to the query (a cosine: comparable across queries, which the
    fused score is not) and the arms that found it."""
    if not hits:
        print("no results")
    for number, hit in enumerate(hits, 1):
        print(f"{number}. {hit.path}  [{why_found(hit)}]")
        if hit.heading:
            print(f"   {hit.heading}")
        print(f"   {hit.snippet}\n")


def why_found(hit) -> str:
    """ "similarity 0.62; keyword #1, vector #3" (and "3 chunks" for a passage joined from three)."""
    parts = [f"similarity {hit.similarity:.2f}"] if hit.similarity is not None else []
    arms = ", ".join(f"{arm} #{rank}" for arm, rank in hit.ranks.items() if rank is not None)
    parts += [arms] if arms else []
    parts += [f"{len(hit.chunk_ids)} chunks"] if len(hit.chunk_ids) > 1 else []
    return "; ".join(parts)
