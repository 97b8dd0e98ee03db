"""An edit re-embeds only what changed: a chunk whose embedding text the document already
had keeps its vector, and the index after the edit equals a from-scratch index of the file
(chunks, postings and statistics exactly; vectors to the last bits the model's batching moves,
under the deterministic torch backend)."""

from __future__ import annotations

import asyncio
import json
import random
from pathlib import Path

import numpy as np
import pytest

from pgrecall.postgres import database
from pgrecall.settings import load_settings
from pgrecall.worker.pipeline import Indexer
from tests.notes import conversation, write_export
from tests.support.statistics import assert_statistics_consistent, rows

SCIFACT = Path("/work/shared/data/scifact/corpus.jsonl")
SECTIONS = 24  # the journal's entries at the start
ITERATIONS = 20
HANG_GUARD = 600.0  # seconds: a write that never ends, not a slow machine

# What a from-scratch index must equal, per document: every chunk row but its id, every posting
# but its ids and its impact (an ordering hint computed from the corpus at write time; see README).
CHUNK_ROWS = """
    SELECT c.ordinal, c.heading, c.text, c.token_count, c.fts::text, c.term_count, c.section_key, c.fresh_from
    FROM pgrecall.chunks c JOIN pgrecall.documents d ON d.id = c.document_id
    WHERE d.source_root = %s AND d.path = %s ORDER BY c.ordinal"""
POSTING_ROWS = """
    SELECT c.ordinal, p.term, p.tf, p.chunk_length, p.document_length
    FROM pgrecall.postings p JOIN pgrecall.chunks c ON c.id = p.chunk_id
    JOIN pgrecall.documents d ON d.id = c.document_id
    WHERE d.source_root = %s AND d.path = %s ORDER BY c.ordinal, p.term"""
VECTORS = """
    SELECT c.embedding FROM pgrecall.chunks c JOIN pgrecall.documents d ON d.id = c.document_id
    WHERE d.source_root = %s AND d.path = %s ORDER BY c.ordinal"""
# Torch is deterministic for a given batch, but a text's vector moves in its last bits with the
# padding its batch-mates impose (measured: at most ~1e-7 per component). A reused vector was
# embedded among other batch-mates than a from-scratch run gives it, so it is compared within this.
VECTOR_TOLERANCE = 1e-6
DOCUMENT_ROW = """
    SELECT kind, title, chunk_count, term_count, embedding_space, error
    FROM pgrecall.documents WHERE source_root = %s AND path = %s AND parent_id IS NULL"""


@pytest.fixture(scope="module")
def abstracts():
    if not SCIFACT.exists():
        pytest.skip(f"SciFact is not at {SCIFACT}")
    with SCIFACT.open() as corpus:
        return [json.loads(line) for _, line in zip(range(120), corpus, strict=False)]


def entry(number: int, abstract: dict) -> str:
    """An entry of one short chunk; every eighth the whole abstract, of several (with overlaps)."""
    text = abstract["text"] if number % 8 == 0 else abstract["text"].split(". ")[0][:200]
    return f"## Entry {number}: {abstract['title']}\n\n{text}\n"


def journal(entries: list[str]) -> str:
    return "# Journal\n\n" + "\n".join(entries)


def edit(rng: random.Random, entries: list[str], spare: list[str]) -> str:
    """One random edit of the journal's entries, in place; returns its name."""
    kind = rng.choice(["append", "insert", "delete", "reorder", "edit"])
    if kind == "append":
        entries.append(spare.pop())
    elif kind == "insert":
        entries.insert(rng.randrange(len(entries)), spare.pop())
    elif kind == "delete":
        del entries[rng.randrange(len(entries))]
    elif kind == "reorder":
        moved = entries.pop(rng.randrange(len(entries)))
        entries.insert(rng.randrange(len(entries) + 1), moved)
    else:  # a word changed in the middle of an entry
        i = rng.randrange(len(entries))
        words = entries[i].split(" ")
        words[len(words) // 2] = f"edited{rng.randrange(10**6)}"
        entries[i] = " ".join(words)
    return kind


def embedding_texts(url: str, root: str, path: str) -> list[str]:
    return [
        f"{heading}\n\n{text}" if heading else text
        for heading, text in rows(
            url,
            """SELECT c.heading, c.text FROM pgrecall.chunks c JOIN pgrecall.documents d ON d.id = c.document_id
               WHERE d.source_root = %s AND d.path = %s ORDER BY c.ordinal""",
            (root, path),
        )
    ]


def indexed(url: str, root: str, path: str) -> tuple:
    return tuple(rows(url, query, (root, path)) for query in (DOCUMENT_ROW, CHUNK_ROWS, POSTING_ROWS))


def vectors(url: str, root: str, path: str) -> np.ndarray:
    with database.connect(url) as conn:
        return np.array([e.to_numpy() for (e,) in conn.execute(VECTORS, (root, path)).fetchall()])


@pytest.mark.slow
@pytest.mark.timeout(900)  # 21 from-scratch torch embeddings of the journal on 2 shared cores
def test_random_edits_reembed_only_new_texts_and_equal_a_from_scratch_index(db_url, tmp_path, abstracts):
    edited_root, scratch_root = tmp_path / "edited", tmp_path / "scratch"
    edited_root.mkdir()
    scratch_root.mkdir()
    settings = load_settings({"PGRECALL_HOME": str(tmp_path / "home"), "PGRECALL_EMBED_BACKEND": "torch"})
    rng = random.Random(20261201)
    entries = [entry(n, a) for n, a in enumerate(abstracts[:SECTIONS])]
    spare = [entry(n, a) for n, a in enumerate(abstracts[SECTIONS:], start=SECTIONS)]
    edits = []

    async def scenario() -> None:
        pool = await database.open_async_pool(db_url)
        indexer = Indexer.for_settings(pool, settings)
        try:
            for iteration in range(ITERATIONS + 1):
                if iteration:
                    edits.append(edit(rng, entries, spare))
                text = journal(entries)
                before = set(embedding_texts(db_url, str(edited_root), "journal.md"))
                (edited_root / "journal.md").write_text(text)
                outcome = await asyncio.wait_for(indexer.index_file(str(edited_root), "journal.md"), HANG_GUARD)
                after = embedding_texts(db_url, str(edited_root), "journal.md")
                assert outcome.status == "indexed" and outcome.chunks == len(after)
                # Exactly the chunks whose embedding text the document did not have went to the model.
                assert outcome.chunks_embedded == sum(1 for t in after if t not in before), edits
                assert outcome.chunks_reused == outcome.chunks - outcome.chunks_embedded

                # From scratch: the same file, never indexed, in a root of its own.
                await indexer.remove_path(str(scratch_root), "journal.md")
                (scratch_root / "journal.md").write_text(text)
                fresh = await asyncio.wait_for(indexer.index_file(str(scratch_root), "journal.md"), HANG_GUARD)
                assert (fresh.chunks_embedded, fresh.chunks_reused) == (fresh.chunks, 0)

                assert indexed(db_url, str(edited_root), "journal.md") == indexed(
                    db_url, str(scratch_root), "journal.md"
                ), edits
                difference = vectors(db_url, str(edited_root), "journal.md") - vectors(
                    db_url, str(scratch_root), "journal.md"
                )
                assert np.abs(difference).max() <= VECTOR_TOLERANCE, edits
        finally:
            await indexer.close()
            await pool.close()

    asyncio.run(scenario())
    assert set(edits) == {"append", "insert", "delete", "reorder", "edit"}
    # The two documents are the same, so the statistics (base plus deltas) equal a recount of both.
    assert_statistics_consistent(db_url)


def all_embedding_texts(url: str) -> list[str]:
    return [
        f"{heading}\n\n{text}" if heading else text
        for heading, text in rows(url, "SELECT heading, text FROM pgrecall.chunks ORDER BY document_id, ordinal")
    ]


def test_a_grown_conversation_and_an_appended_note_embed_only_their_new_chunks(index, db_url, tmp_path, abstracts):
    """Through the queue (the summary `pgrecall index` prints): an export's conversation that
    grew by one message, and a note with an entry appended; the other conversation is not read again."""
    turns = [("human" if i % 2 == 0 else "assistant", a["text"]) for i, a in enumerate(abstracts[:6])]
    other = conversation("c2", "Other", [("human", abstracts[10]["text"])])
    notes = tmp_path / "notes"
    export = write_export(notes / "conversations.json", [conversation("c1", "Grows", turns), other])
    note = notes / "journal.md"
    note.write_text(journal([entry(n, a) for n, a in enumerate(abstracts[20:30], start=1)]))
    first = index(notes)
    assert (first.chunks_embedded, first.chunks_reused) == (first.chunks, 0) and first.chunks > 20
    before = set(all_embedding_texts(db_url))

    turns.append(("human", abstracts[40]["text"]))
    write_export(export, [conversation("c1", "Grows", turns), other])
    with note.open("a") as file:
        file.write("\n" + entry(11, abstracts[41]))
    second = index(notes)
    after = all_embedding_texts(db_url)
    new = sum(1 for text in after if text not in before)
    assert second.statuses["indexed"] == 2 and 0 < new <= 6
    assert (second.chunks_embedded, second.chunks_reused) == (new, second.chunks - new)
    # The unchanged conversation was neither chunked nor counted; everything else kept its vector.
    (untouched,) = rows(db_url, "SELECT chunk_count FROM pgrecall.documents WHERE path LIKE '%%#c2'")[0]
    assert untouched > 0 and second.chunks == len(after) - untouched
    assert_statistics_consistent(db_url)


KEPT_ROWS = """
    SELECT c.id, c.xmin::text, p.term, p.xmin::text, p.document_length
    FROM pgrecall.chunks c JOIN pgrecall.documents d ON d.id = c.document_id
    LEFT JOIN pgrecall.postings p ON p.chunk_id = c.id
    WHERE d.path = 'journal.md' ORDER BY c.id, p.term"""
LENGTH = (
    "SELECT term_count, pgrecall.document_length_step(term_count) FROM pgrecall.documents WHERE path = 'journal.md'"
)


def test_an_append_writes_only_the_new_chunks_and_their_postings(index, db_url, tmp_path, abstracts):
    """A kept chunk's row is never written again on an append, nor are its postings, but when
    the document's length crosses a step (0022): then they carry the new step, as a write from
    scratch would."""
    notes = tmp_path / "notes"
    notes.mkdir()
    note = notes / "journal.md"
    note.write_text(journal([entry(n, a) for n, a in enumerate(abstracts[:60], start=1)]))
    index(notes)
    rewrites = []
    for number, abstract in enumerate(abstracts[60:72], start=61):
        before = {(row[0], row[2]): row for row in rows(db_url, KEPT_ROWS)}
        ((old_length, old_step),) = rows(db_url, LENGTH)
        with note.open("a") as file:
            file.write("\n" + entry(number, abstract))
        summary = index(notes)
        ((new_length, new_step),) = rows(db_url, LENGTH)
        after = {(row[0], row[2]): row for row in rows(db_url, KEPT_ROWS)}
        assert new_length > old_length and summary.chunks_reused == len({chunk for chunk, _ in before})
        kept = [(before[key], row) for key, row in after.items() if key in before]
        assert {chunk for chunk, _ in before} <= {chunk for chunk, _ in after}  # every old row is kept
        assert all(old[1] == new[1] for old, new in kept)  # and its row was not written again
        assert {new[4] for _, new in after.items()} == {new_step}  # every posting carries today's step
        rewritten = sum(old[3] != new[3] for old, new in kept)
        assert rewritten == (len(kept) if new_step != old_step else 0), (old_length, new_length)
        rewrites.append(new_step != old_step)
    assert True in rewrites and False in rewrites  # both cases happened
    assert_statistics_consistent(db_url)


def test_document_length_steps_keep_six_leading_bits(db_url):
    """Exact below 64; above, rounded down by less than 1/32 and never increasing with fewer lexemes."""
    (exact,) = rows(db_url, "SELECT bool_and(pgrecall.document_length_step(n) = n) FROM generate_series(0, 63) n")[0]
    assert exact
    sample = rows(
        db_url,
        """SELECT n, pgrecall.document_length_step(n) FROM generate_series(64, 5000) n
           UNION ALL SELECT n, pgrecall.document_length_step(n)
           FROM unnest(ARRAY[98303, 98304, 100000, 131071, 131072, 4294967297, 9223372036854775807]::bigint[]) n""",
    )
    for length, step in sample:
        assert step <= length and (length - step) * 32 < length, (length, step)
        low_bits = max(step.bit_length() - 6, 0)
        assert step >> low_bits << low_bits == step, (length, step)  # six leading bits at most
    steps = [step for _, step in sorted(sample)]
    assert steps == sorted(steps)
    assert dict(sample)[100000] == 98304 and dict(sample)[131071] == 129024
