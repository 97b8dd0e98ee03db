"""The index records each document's embedding space; vectors of two spaces are never compared.

An index built with one model/backend/quantization and searched with another must
refuse (a one-line error naming both), and `pgrecall index`, the reconciliation and
`pgrecall reembed` embed again exactly what is of another space.
"""

from __future__ import annotations

import asyncio

import numpy as np
import psycopg
import pytest

from pgrecall import status
from pgrecall.errors import EmbeddingSpaceMismatch
from pgrecall.worker.reconciliation import plan
from pgrecall.worker.run import run_reembed
from pgrecall.worker.store import FileState
from tests.notes import ERROR_CODE_NOTES, conversation, write_export, write_notes
from tests.support.statistics import assert_statistics_consistent, rows

OTHER = "another-model@sha256:000000000000/384/torch"
NOTES = {
    **ERROR_CODE_NOTES,
    "notes/kettle.md": "# Kettle\n\nDescale the kettle with citric acid every month.",
    "notes/bikes.md": "# Bikes\n\nThe chain needs oil after riding in the rain.",
}


def execute(url: str, query: str, params=()) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(query, params)


def move_to_space(url: str, paths: list[str], space: str) -> None:
    """The documents at `paths` and their chunks as if embedded in `space` (of 384 dimensions),
    that space added (with its HNSW index) as a writer adds it."""
    with psycopg.connect(url) as conn:
        space_id = conn.execute("SELECT pgrecall.embedding_space_id(%s, 384)", (space,)).fetchone()[0]
        conn.commit()
        conn.execute("UPDATE pgrecall.documents SET embedding_space = %s WHERE path = ANY(%s)", (space, paths))
        conn.execute(
            """UPDATE pgrecall.chunks SET embedding_space_id = %s
               WHERE document_id IN (SELECT id FROM pgrecall.documents WHERE path = ANY(%s))""",
            (space_id, paths),
        )


def spaces_of(url: str) -> dict[str, str | None]:
    return dict(rows(url, "SELECT path, embedding_space FROM pgrecall.documents WHERE chunk_count > 0"))


def test_each_document_records_the_space_it_was_embedded_in(index, db_url, settings, embedder, tmp_path):
    root = write_notes(tmp_path / "notes", NOTES)
    export = write_export(
        root / "claude.json",
        [conversation("c1", "Kettles", [("human", "How do I descale a kettle?"), ("assistant", "Citric acid.")])],
    )
    assert index(root).statuses["indexed"] == len(NOTES) + 1
    spaces = spaces_of(db_url)
    assert len(spaces) == len(NOTES) + 1  # the notes and the conversation (the export itself has no chunks)
    assert set(spaces.values()) == {embedder.space}
    assert any(path.startswith(f"{export.name}#") for path in spaces)
    with psycopg.connect(db_url) as conn:
        report = status.report(conn, settings, embedding_space=embedder.space)
    # A chunk per note, and the conversation's one exchange.
    assert report["embedding_spaces"] == [{"space": embedder.space, "documents": len(NOTES) + 1, "chunks": 7}]
    assert report["documents_to_reembed"] == 0


def test_a_search_in_another_space_refuses_naming_both(index, db_url, searcher, embedder, tmp_path):
    index(write_notes(tmp_path / "notes", NOTES))
    assert searcher.search("E-4711", k=3)[0].path == "incidents/e4711.md"

    execute(db_url, "UPDATE pgrecall.documents SET embedding_space = %s WHERE chunk_count > 0", (OTHER,))
    for mode in ("hybrid", "vector"):
        with pytest.raises(EmbeddingSpaceMismatch) as refused:
            searcher.search("kettle descaling", k=3, mode=mode)
        message = str(refused.value)
        assert OTHER in message and embedder.space in message and "pgrecall reembed" in message
        assert "\n" not in message
    # The keyword arm compares no vectors: it still answers.
    assert searcher.search("E-4711", k=3, mode="keyword")[0].path == "incidents/e4711.md"

    # Vectors indexed before spaces were recorded are of an unknown space: refused too.
    execute(db_url, "UPDATE pgrecall.documents SET embedding_space = NULL")
    with pytest.raises(EmbeddingSpaceMismatch, match="unrecorded"):
        searcher.search("kettle descaling", k=3)


def test_while_two_spaces_are_indexed_the_vector_arm_searches_only_its_own(index, db_url, searcher, tmp_path):
    index(write_notes(tmp_path / "notes", NOTES))
    others = ["notes/kettle.md", "incidents/e4711.md", "notes/garden.md"]
    move_to_space(db_url, others, OTHER)

    vector_hits = searcher.search("descale the kettle with citric acid", k=10, mode="vector")
    assert vector_hits, "the documents of the query's own space are still searched"
    assert not {hit.path for hit in vector_hits} & set(others)
    assert {hit.path for hit in vector_hits} == set(NOTES) - set(others)
    # Hybrid: the keyword arm still finds a document of the other space; its vector rank is absent.
    hybrid = {hit.path: hit for hit in searcher.search("descale the kettle with citric acid", k=10)}
    assert hybrid["notes/kettle.md"].ranks["vector"] is None and hybrid["notes/kettle.md"].ranks["keyword"] == 1


def _vectors(url: str, path: str) -> np.ndarray:
    from pgvector.psycopg import register_vector

    with psycopg.connect(url) as conn:
        register_vector(conn)
        found = conn.execute(
            """SELECT c.embedding FROM pgrecall.chunks c JOIN pgrecall.documents d ON d.id = c.document_id
               WHERE d.path = %s ORDER BY c.ordinal""",
            (path,),
        ).fetchall()
    return np.stack([row[0].to_numpy() for row in found])


def test_reembed_embeds_again_exactly_what_is_of_another_space(index, db_url, settings, embedder, tmp_path):
    root = write_notes(tmp_path / "notes", NOTES)
    write_export(
        root / "claude.json",
        [
            conversation("c1", "Kettles", [("human", "How do I descale a kettle?"), ("assistant", "Citric acid.")]),
            conversation("c2", "Bikes", [("human", "When should I oil the chain?"), ("assistant", "After rain.")]),
        ],
    )
    index(root)
    good = {path: _vectors(db_url, path) for path in ("notes/kettle.md", "claude.json#c1")}
    before = dict(rows(db_url, "SELECT path, indexed_at FROM pgrecall.documents"))

    # Another space's vectors (here: a constant vector stands in for them) on a note and one conversation.
    stale = ["notes/kettle.md", "claude.json#c1"]
    execute(db_url, "UPDATE pgrecall.documents SET embedding_space = %s WHERE path = ANY(%s)", (OTHER, stale))
    # Rows as a writer of that space leaves them: its space's id on each chunk (0023), which is part
    # of every row's write key (0022), so vectors of the right space never match them.
    execute(db_url, "SELECT pgrecall.embedding_space_id(%s, 384)", (OTHER,))
    execute(
        db_url,
        """UPDATE pgrecall.chunks SET embedding = array_fill(0.05, ARRAY[384])::vector,
                  embedding_space_id = (SELECT id FROM pgrecall.embedding_spaces WHERE space = %s)
           WHERE document_id IN (SELECT id FROM pgrecall.documents WHERE path = ANY(%s))""",
        (OTHER, stale),
    )

    summary = asyncio.run(run_reembed(settings, db_url))
    # The note and the export holding the stale conversation: two files, nothing else read.
    assert summary.files_enqueued == 2 and summary.statuses["indexed"] == 2 and not summary.unaccounted
    assert set(spaces_of(db_url).values()) == {embedder.space}
    for path, vectors in good.items():
        # The model's vectors again, not the stand-in (int8's dynamic quantization scales
        # activations per batch, so a text's vector moves slightly with its batch-mates).
        assert np.min(np.sum(_vectors(db_url, path) * vectors, axis=1)) > 0.98, path
    after = dict(rows(db_url, "SELECT path, indexed_at FROM pgrecall.documents"))
    redone = {path for path in after if after[path] != before[path]}
    assert redone == {"notes/kettle.md", "claude.json#c1", "claude.json"}  # c2 kept its vectors
    assert_statistics_consistent(db_url)

    again = asyncio.run(run_reembed(settings, db_url))
    assert again.files_enqueued == 0


def test_index_and_the_reconciliation_count_another_space_as_a_change(index, db_url, embedder, tmp_path):
    root = write_notes(tmp_path / "notes", NOTES)
    index(root)
    execute(db_url, "UPDATE pgrecall.documents SET embedding_space = %s WHERE path = 'notes/bikes.md'", (OTHER,))
    summary = index(root)
    assert (summary.statuses["indexed"], summary.statuses["unchanged"]) == (1, len(NOTES) - 1)
    assert set(spaces_of(db_url).values()) == {embedder.space}

    size_and_mtime = (10, "mtime")
    indexed = {
        "a.md": FileState("a.md", 10, "mtime", "hash", "v1/256", other_space=False),
        "b.md": FileState("b.md", 10, "mtime", "hash", "v1/256", other_space=True),
    }
    changed, vanished = plan({"a.md": size_and_mtime, "b.md": size_and_mtime}, indexed, "v1/256")
    assert (changed, vanished) == (["b.md"], [])
