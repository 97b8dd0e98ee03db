"""`pgrecall status` and `pgrecall failures`: what the index holds, and what could not be indexed."""

from __future__ import annotations

import argparse
import json

from pgrecall.cli.common import command, url
from pgrecall.postgres import database
from pgrecall.settings import Settings


def add_parser(commands: argparse._SubParsersAction) -> None:
    status = command(commands, "status", run_status, help="documents, chunks, queue and failures")
    status.add_argument("--json", action="store_true")

    failures = command(commands, "failures", run_failures, help="files that could not be indexed, with the reason")
    failures.add_argument("--json", action="store_true")


def run_status(args: argparse.Namespace, settings: Settings) -> int:
    from pgrecall import status as status_module
    from pgrecall.embedders.embedding import embedder_for
    from pgrecall.languages import model_card_languages
    from pgrecall.memory.notes import MemoryNotes, folder_of
    from pgrecall.worker.scan import iter_files

    embedder = embedder_for(settings)
    with database.connect(url(settings)) as conn:
        status = status_module.report(
            conn,
            settings,
            count_files=lambda folder: sum(1 for _ in iter_files(folder)),
            memory_folder=folder_of(settings),
            count_memories=lambda folder: sum(1 for _ in MemoryNotes(folder).memories()),
            embedding_space=embedder.space,
            model_languages=model_card_languages(embedder.model_path),
        )
    if args.json:
        print(json.dumps(status, default=str))
    else:
        print_index(status, settings)
        print_roots(status)
    return 0


def print_index(status: dict, settings: Settings) -> None:
    queue = status["queue"]
    print(
        f"database:   {status['database']} ({database.pgdata_path(settings) if settings.embedded else 'PGRECALL_DATABASE_URL'})"
    )
    print(f"documents:  {status['documents']}")
    print(f"chunks:     {status['chunks']}")
    print(f"failed:     {status['failed']}   skipped: {status['skipped']}")
    oldest = f", oldest waiting {queue['oldest_waiting_age_s']} s" if queue["oldest_waiting_age_s"] is not None else ""
    print(f"queue:      {queue['todo']} waiting, {queue['doing']} running, {queue['failed']} failed jobs{oldest}")
    if queue["stalled"]:
        print(
            f"stalled:    {queue['stalled']} running jobs of a worker that stopped answering;"
            " the next index, serve or worker runs them again"
        )
    print(f"last index: {status['last_indexed_at'] or 'never'}")
    redacted = status["redactions"]
    kinds = ", ".join(f"{kind}: {count}" for kind, count in redacted["by_kind"].items())
    print(
        f"redacted:   {redacted['secrets']} secrets in {redacted['documents']} documents"
        + (f" ({kinds})" if kinds else "")
    )
    for space in status["embedding_spaces"]:
        current = " (this configuration's)" if space["space"] == status["embedding_space"] else ""
        name = space["space"] or "not recorded"
        print(f"embedded:   {space['documents']} documents, {space['chunks']} chunks in {name}{current}")
    print_languages(status["languages"])
    if status["documents_to_reembed"]:
        print(
            f"reembed:    {status['documents_to_reembed']} documents of another embedding space than "
            f"{status['embedding_space']}: pgrecall reembed, or the next serve reconciliation, embeds them again"
        )


def print_languages(languages: list[dict]) -> None:
    if not languages:
        return
    counts = ", ".join(f"{row['language']} {row['documents']}" for row in languages)
    print(f"languages:  {counts} documents")
    unread = [row["language"] for row in languages if not row["model_reads"]]
    if unread:
        print(
            f"            the embedding model does not read {', '.join(unread)}: those documents are found by "
            "their words alone; pgrecall models add multilingual-e5-small reads about 100 languages"
        )


def print_roots(status: dict) -> None:
    from pgrecall.worker.watch import describe_watch

    memories = status["memories"]
    print(f"memories:   {memories['count']} in {memories['folder']}, {memories['indexed']} indexed")
    for root in status["roots"]:
        last = root["last_indexed_at"] or "never"
        if not root["followed"]:
            print(f"indexed:    {root['path']}: {root['indexed']} files indexed, last {last} (a folder not followed)")
            continue
        files = root["files"] if root["files"] is not None else "?"
        print(f"root:       {root['name']} ({root['path']}): {root['indexed']} of {files} files indexed, last {last}")
        watch = describe_watch(root["watch_mode"], root["watcher_seen_at"], root["last_event_at"], root["watched"])
        print(f"  watch:    {watch}")
        if root["archive_folder"] or root["archived"]:
            print(f"  archive:  {root['archived']} archived (deleted at the source, kept in {root['archive_folder']})")


def run_failures(args: argparse.Namespace, settings: Settings) -> int:
    from pgrecall import status

    with database.connect(url(settings)) as conn:
        rows = status.failures(conn)
    if args.json:
        print(json.dumps(rows))
        return 0
    if not rows:
        print("no failures")
    for row in rows:
        print(f"{row['source_root']}/{row['path']}: [{row['error_stage']}] {row['error']}")
    return 0
