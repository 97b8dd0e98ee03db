"""The pipeline's batcher groups each call's chunks by length (pgrecall.worker.batcher):
every chunk must still get its own vector back, through the real queue, model and database."""

import asyncio

import numpy as np

from pgrecall.embedders.embedding import embedder_for
from pgrecall.settings import load_settings
from tests.notes import write_notes


def test_chunks_grouped_by_length_for_the_model_are_stored_with_their_own_vectors(db_url, tmp_path):
    from pgrecall.postgres import database
    from pgrecall.worker.run import run_index

    # Notes of one long paragraph (several full chunks) and a short tail, and one-line notes:
    # every call mixes lengths, and batches of 4 make several groups per call.
    sentences = [f"Sentence {n} tells how the {n % 5}th reactor cooled down after the incident." for n in range(60)]
    notes = {f"long{i}.md": f"# Long {i}\n\n{' '.join(sentences[i:])}\n\nShort tail {i}." for i in range(6)}
    notes |= {f"short{i}.md": f"# Short {i}\n\nOne line about pumps, number {i}." for i in range(10)}
    # fp32 ONNX: int8's dynamic quantization scales activations per batch, so its vectors move
    # slightly with their batch-mates and could not tell a neighbour's vector from a chunk's own.
    backend = {"PGRECALL_EMBED_BACKEND": "onnx"}
    settings = load_settings(
        {"PGRECALL_HOME": str(tmp_path / "home"), "PGRECALL_WORKERS": "16", "PGRECALL_EMBED_BATCH": "4", **backend}
    )
    summary = asyncio.run(run_index(settings, db_url, [str(write_notes(tmp_path / "notes", notes))]))
    assert summary.statuses["indexed"] == 16 and summary.chunks > 20

    with database.connect(db_url) as conn:
        stored = conn.execute("SELECT heading, text, embedding FROM pgrecall.chunks ORDER BY id").fetchall()
    lengths = {len(text) for _, text, _ in stored}
    assert max(lengths) > 4 * min(lengths)  # the grouping had something to sort
    texts = [f"{heading}\n\n{text}" if heading else text for heading, text, _ in stored]
    expected = embedder_for(settings).embed_batch(texts)
    vectors = np.array([np.asarray(embedding.to_numpy(), dtype=np.float32) for _, _, embedding in stored])
    assert np.min(np.sum(vectors * expected, axis=1)) > 0.999  # each chunk's own vector, not a neighbour's
