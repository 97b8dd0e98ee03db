"""The write path end to end: real queue, real workers, real model, real PostgreSQL."""

import structlog

from tests.notes import ERROR_CODE_NOTES, conversation, write_export, write_notes
from tests.support.statistics import (
    EFFECTIVE_CORPUS_STATS,
    FOLDED_CORPUS_STATS,
    assert_statistics_consistent,
    fold_statistics,
    rows,
)


def test_folder_is_indexed_with_chunks_vectors_and_postings(index, db_url, tmp_path):
    root = write_notes(tmp_path / "notes", ERROR_CODE_NOTES)
    summary = index(root)
    assert summary.statuses["indexed"] == 4
    documents = rows(db_url, "SELECT path, kind, chunk_count, error FROM pgrecall.documents ORDER BY path")
    assert documents == [
        ("incidents/e4711.md", "markdown", 1, None),
        ("incidents/e4712.md", "markdown", 1, None),
        ("notes/garden.md", "markdown", 1, None),
        ("notes/postgres.txt", "text", 1, None),
    ]
    norms = rows(db_url, "SELECT round((vector_norm(embedding))::numeric, 3) FROM pgrecall.chunks")
    assert {n for (n,) in norms} == {1}
    assert rows(db_url, "SELECT count(*) FROM pgrecall.postings WHERE term = 'e-4711'") == [(1,)]
    assert_statistics_consistent(db_url)


def test_unchanged_folder_embeds_nothing_the_second_time(index, tmp_path):
    root = write_notes(tmp_path / "notes", ERROR_CODE_NOTES)
    first = index(root)
    assert first.embed_calls >= 1
    second = index(root)
    assert second.statuses == {"unchanged": 4}
    assert second.chunks == 0
    assert second.embed_calls == 0


def test_small_notes_are_embedded_together_not_one_by_one(index, tmp_path):
    notes = {f"n{i:03}.md": f"# Note {i}\n\nA short note number {i} about topic {i % 7}." for i in range(60)}
    summary = index(write_notes(tmp_path / "notes", notes))
    assert summary.statuses["indexed"] == 60
    # 8 jobs at a time share the model's calls; how many calls that makes depends on how fast the
    # jobs chunk their notes against how fast the model answers, so only "fewer than one per note"
    # is asserted here. tests/unit/test_batcher.py holds the exact coalescing, with no timing.
    assert summary.embed_calls < len(notes), summary.embed_calls


def test_edited_and_deleted_files_follow_the_folder(index, db_url, tmp_path):
    root = write_notes(tmp_path / "notes", ERROR_CODE_NOTES)
    index(root)
    (root / "notes/garden.md").write_text("# Garden\n\nCucumbers need a trellis.")
    (root / "incidents/e4712.md").unlink()
    summary = index(root)
    assert summary.statuses == {"indexed": 1, "unchanged": 2, "removed": 1}
    texts = [t for (t,) in rows(db_url, "SELECT text FROM pgrecall.chunks ORDER BY text")]
    assert any("Cucumbers" in t for t in texts) and not any("Tomatoes" in t for t in texts)
    assert rows(db_url, "SELECT count(*) FROM pgrecall.documents WHERE path = 'incidents/e4712.md'") == [(0,)]
    assert rows(db_url, "SELECT count(*) FROM pgrecall.postings WHERE term = 'e-4712'") == [(0,)]
    assert_statistics_consistent(db_url)


def test_broken_files_are_recorded_and_skipped_while_the_rest_is_indexed(index, db_url, tmp_path):
    root = write_notes(
        tmp_path / "notes",
        {
            **ERROR_CODE_NOTES,
            "image.png": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
            "binary.md": b"# looks like markdown\x00\x01\x02",
            "latin1.txt": b"caf\xe9 cr\xe8me br\xfbl\xe9e",
        },
    )
    summary = index(root)
    assert summary.statuses == {"indexed": 4, "skipped": 2, "failed": 1}
    failures = dict(
        (path, (stage, error))
        for path, stage, error in rows(
            db_url, "SELECT path, error_stage, error FROM pgrecall.documents WHERE error IS NOT NULL"
        )
    )
    assert failures["image.png"] == ("detect", "unsupported file type '.png'")
    assert failures["binary.md"] == ("detect", "binary file (contains NUL bytes)")
    assert failures["latin1.txt"][0] == "parse" and "UTF-8" in failures["latin1.txt"][1]
    assert rows(db_url, "SELECT count(*) FROM pgrecall.chunks") == [(4,)]


def test_notes_of_a_heading_alone_or_broken_front_matter_are_indexed_and_found(index, searcher, db_url, tmp_path):
    """A note that is only a heading has one chunk of it; front matter that is not YAML is kept as
    text, with a file_warning logged, and the note is indexed, not failed."""
    notes = {
        "heading-only.md": "---\ntags: [people]\n---\n# Sourdough starter feeding schedule\n",
        "broken-front-matter.md": "---\ntitle: Meeting: lighthouse budget\n---\nThe keeper's cottage needs a roof.",
    }
    with structlog.testing.capture_logs() as logs:
        summary = index(write_notes(tmp_path / "notes", notes))
    assert summary.statuses == {"indexed": 2}
    documents = rows(db_url, "SELECT path, chunk_count, error, metadata FROM pgrecall.documents ORDER BY path")
    assert documents == [("broken-front-matter.md", 1, None, {}), ("heading-only.md", 1, None, {"tags": ["people"]})]
    (warning,) = [event for event in logs if event["event"] == "file_warning"]
    assert warning["path"] == "broken-front-matter.md" and warning["log_level"] == "warning"
    assert warning["warning"].startswith("front matter kept as text: invalid YAML front matter")
    for mode in ("keyword", "vector"):
        assert searcher.search("sourdough starter", k=1, mode=mode)[0].path == "heading-only.md", mode
        assert searcher.search("lighthouse budget", k=1, mode=mode)[0].path == "broken-front-matter.md", mode
        assert searcher.search("keeper's cottage roof", k=1, mode=mode)[0].path == "broken-front-matter.md", mode


def test_a_file_that_breaks_keeps_its_indexed_chunks_until_fixed(index, db_url, tmp_path):
    root = write_notes(tmp_path / "notes", {"a.md": "# A\n\nGood content about lighthouses."})
    index(root)
    (root / "a.md").write_bytes(b"# A\n\nbroken \xff\xfe bytes")
    summary = index(root)
    assert summary.statuses == {"failed": 1}
    assert rows(db_url, "SELECT error_stage, chunk_count FROM pgrecall.documents")[0] == ("parse", 1)
    assert "lighthouses" in rows(db_url, "SELECT text FROM pgrecall.chunks")[0][0]
    (root / "a.md").write_text("# A\n\nFixed content about harbours.")
    index(root)
    assert rows(db_url, "SELECT error, error_stage FROM pgrecall.documents") == [(None, None)]
    assert "harbours" in rows(db_url, "SELECT text FROM pgrecall.chunks")[0][0]


def test_claude_export_reimported_after_growing_updates_in_place(index, db_url, tmp_path):
    export = tmp_path / "export" / "conversations.json"
    first = conversation(
        "c-1",
        "Backup plan",
        [("human", "How should I back up Postgres?"), ("assistant", "Use pg_basebackup and WAL archiving.")],
    )
    second = conversation(
        "c-2", "Garden", [("human", "When to plant garlic?")], attachment="Plant garlic cloves in October."
    )
    write_export(export, [first, second])
    summary = index(export.parent)
    assert summary.statuses == {"indexed": 1}
    docs = rows(db_url, "SELECT path, kind, title, chunk_count FROM pgrecall.documents ORDER BY path")
    assert docs == [
        ("conversations.json", "claude_export", "conversations.json", 0),
        ("conversations.json#c-1", "claude_conversation", "Backup plan", 1),  # one exchange
        ("conversations.json#c-2", "claude_conversation", "Garden", 2),  # a question and an attachment
    ]
    ids_before = dict(rows(db_url, "SELECT path, id FROM pgrecall.documents"))
    chunk_ids_c1 = rows(
        db_url,
        "SELECT c.id FROM pgrecall.chunks c JOIN pgrecall.documents d ON d.id = c.document_id WHERE d.path LIKE %s",
        ("%c-1",),
    )

    # The export grows: a new turn in c-2, and a new conversation c-3.
    second["chat_messages"].append(
        conversation("c-2", "Garden", [("assistant", "Mulch after planting.")])["chat_messages"][0]
    )
    third = conversation("c-3", "Rust lifetimes", [("human", "Explain lifetime elision")])
    write_export(export, [first, second, third])
    summary = index(export.parent)
    assert summary.statuses == {"indexed": 1}
    assert summary.chunks == 2 + 1  # c-2 re-chunked (its exchange, now answered, and attachment), c-3 new
    docs = rows(db_url, "SELECT path, chunk_count FROM pgrecall.documents WHERE parent_id IS NOT NULL ORDER BY path")
    assert docs == [("conversations.json#c-1", 1), ("conversations.json#c-2", 2), ("conversations.json#c-3", 1)]
    ids_after = dict(rows(db_url, "SELECT path, id FROM pgrecall.documents"))
    assert all(ids_after[path] == ids_before[path] for path in ids_before)
    assert (
        rows(
            db_url,
            "SELECT c.id FROM pgrecall.chunks c JOIN pgrecall.documents d ON d.id = c.document_id WHERE d.path LIKE %s",
            ("%c-1",),
        )
        == chunk_ids_c1
    )

    # A conversation deleted from the export leaves the index too.
    write_export(export, [first, third])
    index(export.parent)
    paths = [
        p for (p,) in rows(db_url, "SELECT path FROM pgrecall.documents WHERE parent_id IS NOT NULL ORDER BY path")
    ]
    assert paths == ["conversations.json#c-1", "conversations.json#c-3"]
    assert_statistics_consistent(db_url)


def test_deleting_an_export_removes_its_conversations(index, db_url, tmp_path):
    export = write_export(
        tmp_path / "export" / "conversations.json", [conversation("c-1", "A", [("human", "hello there")])]
    )
    index(export.parent)
    export.unlink()
    index(export.parent)
    assert rows(db_url, "SELECT count(*) FROM pgrecall.documents") == [(0,)]
    assert rows(db_url, EFFECTIVE_CORPUS_STATS) == []  # every language's totals back at zero
    fold_statistics(db_url)  # zero-count terms are pruned at the fold
    assert rows(db_url, FOLDED_CORPUS_STATS) == []
    assert rows(db_url, "SELECT count(*) FROM pgrecall.term_stats") == [(0,)]


def test_queued_jobs_survive_a_restart(settings, db_url, tmp_path):
    """Jobs enqueued by one process are worked by the next."""
    import asyncio

    from pgrecall.worker import tasks
    from pgrecall.worker.run import run_index

    root = write_notes(tmp_path / "notes", {"a.md": "# A\n\nalpha", "b.md": "# B\n\nbeta"})

    async def enqueue_only():
        app = tasks.build_app(db_url)
        async with app.open_async():
            return await tasks.enqueue(app, tasks.INDEX_TASK, str(root), ["a.md", "b.md"])

    assert asyncio.run(enqueue_only()) == 2
    assert asyncio.run(enqueue_only()) == 0  # one waiting job per path: the queueing lock
    summary = asyncio.run(run_index(settings, db_url, [str(root / "a.md")]))
    assert summary.statuses["indexed"] == 2  # a.md, and b.md left in the queue by the first process
    assert rows(db_url, "SELECT count(*) FROM procrastinate_jobs WHERE status = 'todo'") == [(0,)]


def test_chunks_respect_the_configured_size(settings, db_url, tmp_path, embedder):
    import asyncio
    import dataclasses

    from pgrecall.worker.chunk import chunking_signature
    from pgrecall.worker.run import run_index

    sentence = "Metalloproteinases degrade the extracellular matrix during tissue remodelling. "
    root = write_notes(tmp_path / "notes", {"long.md": "# Matrix\n\n" + sentence * 40})
    for chunk_tokens in (128, 64):
        summary = asyncio.run(run_index(dataclasses.replace(settings, chunk_tokens=chunk_tokens), db_url, [str(root)]))
        assert summary.statuses == {"indexed": 1}  # a new size re-chunks the unchanged file
        texts = [t for (t,) in rows(db_url, "SELECT heading || E'\\n\\n' || text FROM pgrecall.chunks")]
        assert len(texts) > 4
        assert max(embedder.count_tokens(texts)) <= chunk_tokens - 2  # [CLS] and [SEP] count too
        assert rows(db_url, "SELECT DISTINCT chunking FROM pgrecall.documents") == [(chunking_signature(chunk_tokens),)]
        assert_statistics_consistent(db_url)
    again = asyncio.run(run_index(dataclasses.replace(settings, chunk_tokens=64), db_url, [str(root)]))
    assert again.statuses == {"unchanged": 1}


def test_a_job_longer_than_the_shutdown_grace_is_not_cancelled_when_the_queue_runs_dry(
    index, db_url, tmp_path, monkeypatch
):
    """`pgrecall index`'s worker stops once no job is left to fetch; a big file still being
    embedded then must finish, not be cancelled after the grace period and retried forever."""
    from pgrecall.worker import tasks

    monkeypatch.setattr(tasks, "SHUTDOWN_GRACE_SECONDS", 0.2)
    paragraph = "Reactor {n} cooled down slowly after the pumps restarted at dawn, said the log. "
    big = "# Log\n\n" + "\n\n".join(paragraph.format(n=n) * 6 for n in range(400))
    root = write_notes(tmp_path / "notes", {"big.md": big, "small.md": "# Small\n\nA short note."})
    summary = index(root)
    assert summary.statuses == {"indexed": 2} and not summary.unaccounted
    assert summary.chunks > 300  # seconds of embedding: far longer than the grace
    assert rows(db_url, "SELECT count(*) FROM procrastinate_jobs") == [(0,)]


def test_index_again_reads_only_files_whose_size_or_time_moved(settings, db_url, tmp_path):
    """A second `pgrecall index` enqueues no job for a file of the size and time it was
    indexed at, as the service's reconciliation does; a file whose time moved is read again
    (and found unchanged), one whose size moved is indexed again."""
    import asyncio
    import os

    from pgrecall.worker.run import run_index

    root = write_notes(tmp_path / "notes", {f"n{i}.md": f"# Note {i}\n\nSettled text number {i}." for i in range(5)})
    first = asyncio.run(run_index(settings, db_url, [str(root)]))
    assert first.statuses == {"indexed": 5}

    second = asyncio.run(run_index(settings, db_url, [str(root)]))
    assert (second.files_enqueued, second.statuses) == (0, {"unchanged": 5})

    os.utime(root / "n0.md", (1_000_000_000, 1_000_000_000))  # touched: read again, found unchanged
    (root / "n1.md").write_text("# Note 1\n\nThe answer is BBBB, longer now.")
    third = asyncio.run(run_index(settings, db_url, [str(root)]))
    assert third.files_enqueued == 2
    assert third.statuses == {"unchanged": 4, "indexed": 1}
    assert rows(db_url, "SELECT count(*) FROM pgrecall.chunks WHERE text LIKE '%%BBBB%%'") == [(1,)]
