"""Any local sentence-transformers model: its width, pooling and prompts, and its own HNSW index.

No model can be downloaded here, so the second model is a tiny BERT built by the test
(tests/support/tiny_model.py): 32 dimensions, random weights, e5's prompts. Its vectors mean
nothing, which is why searches in its space are checked against the exact ranking of its own
vectors rather than against relevance.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json

import numpy as np
import psycopg
import pytest
from pgvector.psycopg import register_vector

from pgrecall.api import read_queries as read_store
from pgrecall.api.searcher import Searcher
from pgrecall.cli import main
from pgrecall.embedders.embedding import new_embedder
from pgrecall.errors import ModelUnavailable
from pgrecall.worker.run import run_index
from tests.notes import ERROR_CODE_NOTES, write_notes
from tests.support.tiny_model import E5_PROMPTS, build_tiny_model

NOTES = {
    **ERROR_CODE_NOTES,
    "notes/kettle.md": "# Kettle\n\nDescale the kettle with citric acid every month.",
    "notes/bikes.md": "# Bikes\n\nThe chain needs oil after riding in the rain.",
    "notes/bread.md": "# Bread\n\nA sourdough starter wants flour and water every day.\n\n## Baking\n\nBake at 250 C.",
}
QUERIES = ("descale the kettle", "oil the bicycle chain", "E-4711", "bake sourdough bread")


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    return build_tiny_model(tmp_path_factory.mktemp("models") / "tiny-bert")


def _space_rows(url: str) -> dict[str, tuple[int, int]]:
    with psycopg.connect(url) as conn:
        return {
            space: (id_, dims)
            for id_, space, dims in conn.execute("SELECT id, space, dimensions FROM pgrecall.embedding_spaces")
        }


def _exact_ranking(url: str, space_id: int, query_vector: np.ndarray, k: int) -> list[tuple[int, float]]:
    """(chunk id, cosine similarity) of the space's chunks, best first, computed here from the stored vectors."""
    with psycopg.connect(url) as conn:
        register_vector(conn)
        found = conn.execute(
            "SELECT id, embedding FROM pgrecall.chunks WHERE embedding_space_id = %s", (space_id,)
        ).fetchall()
    ids = np.array([row[0] for row in found])
    vectors = np.stack([row[1].to_numpy() for row in found])
    similarities = vectors @ query_vector / np.linalg.norm(vectors, axis=1) / np.linalg.norm(query_vector)
    order = np.lexsort((ids, -similarities))[:k]
    return [(int(ids[i]), float(similarities[i])) for i in order]


def _plan_indexes(url: str, space_id: int, dimensions: int, filtered: bool) -> set[str]:
    """The indexes the vector arm's plan reads (tiny tables: sequential scans are priced out, so the
    plan shows whether the space's index can serve the query at all)."""
    params = {
        **read_store._filter_values({"path_prefix": "notes/"} if filtered else None),
        "embedding": np.ones(dimensions, dtype=np.float32),
        "limit": 10,
    }
    query = read_store.vector_arm_query("vector_arm", filtered, space_id, dimensions)
    with psycopg.connect(url) as conn:
        register_vector(conn)
        conn.execute("SET enable_seqscan = off")
        (plan,) = conn.execute(psycopg.sql.SQL("EXPLAIN (FORMAT JSON) ") + query, params).fetchone()

    def names(node: dict) -> set[str]:
        found = {node["Index Name"]} if "Index Name" in node else set()
        for child in node.get("Plans", []):
            found |= names(child)
        return found

    return names(plan[0]["Plan"])


def test_the_layout_pooling_and_prompts_are_the_folders_own(tiny_model, tmp_path):
    """torch runs the folder as sentence-transformers does with the prompts of its configuration;
    the ONNX export, pooled here, gives the same vectors."""
    from sentence_transformers import SentenceTransformer

    texts = ["Descale the kettle with citric acid.", "The chain needs oil after riding in the rain, every time."]
    torch_embedder = new_embedder(tiny_model, backend="torch", home=tmp_path / "home")
    reference = SentenceTransformer(str(tiny_model), device="cpu", local_files_only=True)
    assert torch_embedder.dimensions == 32
    assert torch_embedder.layout.query_prompt == "query: " and torch_embedder.layout.document_prompt == "passage: "
    queries = torch_embedder.embed_queries(texts)
    documents = torch_embedder.embed_batch(texts)
    expected_queries = reference.encode(texts, prompt="query: ", normalize_embeddings=True)
    expected_documents = reference.encode(texts, prompt="passage: ", normalize_embeddings=True)
    np.testing.assert_allclose(queries, expected_queries, atol=1e-6)
    np.testing.assert_allclose(documents, expected_documents, atol=1e-6)
    assert np.abs(queries - documents).max() > 1e-3  # the two prompts make two different vectors
    # The chunker leaves room for the document prompt (its word pieces: "passage", ":").
    assert torch_embedder.word_pieces("passage: ") == ["passage", ":"]
    assert torch_embedder.max_tokens == 128 - 2

    onnx_embedder = new_embedder(tiny_model, backend="onnx", home=tmp_path / "home")
    np.testing.assert_allclose(onnx_embedder.embed_queries(texts), queries, atol=1e-5)
    np.testing.assert_allclose(onnx_embedder.embed_batch(texts), documents, atol=1e-5)
    assert "/32/torch/prompts-" in torch_embedder.space and "/32/onnx/prompts-" in onnx_embedder.space


@pytest.mark.parametrize(("pooling", "include_prompt"), [("cls", True), ("max", True), ("lasttoken", False)])
def test_the_onnx_backend_pools_as_sentence_transformers_does(tmp_path, pooling, include_prompt):
    model = build_tiny_model(tmp_path / f"tiny-{pooling}", pooling=pooling, include_prompt=include_prompt, seed=1)
    texts = ["a short one", "a somewhat longer text about kettles, descaling and citric acid"]
    torch_embedder = new_embedder(model, backend="torch", home=tmp_path / "home")
    onnx_embedder = new_embedder(model, backend="onnx", home=tmp_path / "home")
    for embed in ("embed_queries", "embed_batch"):
        np.testing.assert_allclose(
            getattr(onnx_embedder, embed)(texts), getattr(torch_embedder, embed)(texts), atol=1e-5
        )
    assert pooling in torch_embedder.space


def test_a_model_the_onnx_backends_cannot_pool_is_refused_there_in_one_line(tmp_path):
    model = build_tiny_model(tmp_path / "tiny-sqrt", seed=2)
    config = model / "1_Pooling" / "config.json"
    pooling = json.loads(config.read_text())
    config.write_text(
        json.dumps({**pooling, "pooling_mode_mean_tokens": False, "pooling_mode_mean_sqrt_len_tokens": True})
    )
    with pytest.raises(ModelUnavailable, match="mean_sqrt_len.*use torch"):
        new_embedder(model, backend="onnx", home=tmp_path / "home").embed_batch(["x"])
    assert new_embedder(model, backend="torch", home=tmp_path / "home").embed_batch(["x"]).shape == (1, 32)


def test_a_second_model_of_another_width_is_indexed_and_searched_beside_the_first(
    index, db_url, settings, embedder, searcher, tiny_model, tmp_path, monkeypatch, capsys
):
    bundled_root = write_notes(tmp_path / "bundled", NOTES)
    index(bundled_root)
    roots = {embedder.space: bundled_root}
    searchers = {embedder.space: searcher}
    for backend in ("torch", "onnx"):
        tiny_settings = dataclasses.replace(settings, model=str(tiny_model), embed_backend=backend)
        root = write_notes(tmp_path / f"tiny-{backend}", NOTES)
        summary = asyncio.run(run_index(tiny_settings, db_url, [str(root)]))
        assert summary.statuses["indexed"] == len(NOTES)
        tiny = new_embedder(tiny_model, backend=backend, home=tmp_path / "home")
        roots[tiny.space] = root
        searchers[tiny.space] = Searcher(db_url, tiny_settings, embedder=tiny, pool_size=1)

    try:
        spaces = _space_rows(db_url)
        assert set(spaces) == set(roots)  # three spaces: the bundled model's, the tiny one's in two backends
        assert sorted(dims for _, dims in spaces.values()) == [32, 32, 384]
        for space, (space_id, dimensions) in spaces.items():
            # Each space's vector arm reads its own HNSW index, filtered or not.
            for filtered in (False, True):
                assert _plan_indexes(db_url, space_id, dimensions, filtered) >= {f"chunks_embedding_space_{space_id}"}
            for query in QUERIES:
                hits = searchers[space].search(query, k=5, mode="vector")
                assert hits and {hit.source_root for hit in hits} == {str(roots[space])}
                vector = searchers[space].embedder.embed_queries([query])[0]
                exact = _exact_ranking(db_url, space_id, vector, 5)
                assert [hit.chunk_id for hit in hits] == [chunk_id for chunk_id, _ in exact]
                assert [hit.similarity for hit in hits] == pytest.approx([s for _, s in exact], abs=1e-5)
            # Hybrid: the keyword arm finds the identifier in every root; the similarity is only
            # given for chunks of the query's space.
            hybrid = searchers[space].search("E-4711", k=10)
            found_in = {hit.source_root for hit in hybrid if hit.path == "incidents/e4711.md"}
            assert found_in == {str(root) for root in roots.values()}
            for hit in hybrid:
                assert (hit.similarity is not None) == (hit.source_root == str(roots[space]))
    finally:
        for other in searchers.values():
            if other is not searcher:
                other.close()

    # pgrecall models: each space, its documents, its index and what it needs.
    monkeypatch.setenv("PGRECALL_DATABASE_URL", db_url)
    monkeypatch.setenv("PGRECALL_MODEL", str(tiny_model))
    monkeypatch.setenv("PGRECALL_EMBED_BACKEND", "onnx")
    capsys.readouterr()  # what the indexing printed
    assert main(["models", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    tiny_onnx = new_embedder(tiny_model, backend="onnx", home=tmp_path / "home").space
    assert listed["configured_space"] == tiny_onnx
    by_space = {row["space"]: row for row in listed["spaces"]}
    assert set(by_space) == set(roots)
    for space, row in by_space.items():
        assert (row["documents"], row["hnsw_index"]) == (len(NOTES), f"chunks_embedding_space_{spaces[space][0]}")
        assert row["configured"] == (space == tiny_onnx)
    assert (
        by_space[embedder.space]["needs"]
        == f"the bundled model (PGRECALL_MODEL unset), PGRECALL_EMBED_BACKEND={embedder.backend}"
    )
    assert by_space[tiny_onnx]["needs"].startswith("PGRECALL_MODEL=<the folder tiny-bert, weights sha256 ")
    assert by_space[tiny_onnx]["dimensions"] == 32 and by_space[tiny_onnx]["model"] == "tiny-bert"
    assert main(["models"]) == 0
    text = capsys.readouterr().out
    assert f"{tiny_onnx}  (this configuration's)" in text and "32 dimensions, backend onnx" in text


def test_a_prompts_change_is_another_space(tiny_model, tmp_path):
    """Prompts change the vectors: a folder whose prompts differ names another space, so its
    index is embedded again instead of mixing vectors."""
    other = build_tiny_model(tmp_path / "tiny-bert", prompts={"query": "Represent this sentence: "})
    first = new_embedder(tiny_model, backend="torch", home=tmp_path / "home")
    second = new_embedder(other, backend="torch", home=tmp_path / "home")
    assert first.weights_sha256 == second.weights_sha256 and first.space != second.space
    assert second.layout.document_prompt == ""
    assert E5_PROMPTS["query"] == first.layout.query_prompt
