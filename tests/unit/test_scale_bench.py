"""bench/scale_bench.py: resumable growth, and copies that do not depend on how the index was grown."""

from __future__ import annotations

import random

import numpy as np

from tests.support.bench import scale_bench


def test_plan_resumes_where_the_last_run_stopped():
    counts = [3, 1, 2]  # chunks of the three source documents
    first = list(scale_bench.plan(0, counts, 5))
    assert first == [(1, 0), (1, 1), (1, 2)]  # 6 chunks: at least the 5 asked for
    rest = list(scale_bench.plan(len(first), counts, 4))
    assert rest == [(2, 0), (2, 1)]  # copy 2 begins after copy 1's last document
    assert list(scale_bench.plan(0, counts, 0)) == []
    assert list(scale_bench.plan(0, [], 10)) == []


def test_a_copy_is_the_same_however_the_index_was_grown():
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(2, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    source = scale_bench.Source(
        [("/notes", "a.md", "markdown", "A", "v1/128")],
        [[(0, "", "one two three four five six seven eight nine ten", 12), (1, "", "alpha beta gamma", 4)]],
        [vectors],
    )
    _, parsed, chunks, moved, _ = scale_bench.make_copy(source, 3, 0)
    _, parsed_again, chunks_again, moved_again, _ = scale_bench.make_copy(source, 3, 0)
    assert parsed.path == "copy3/a.md" == parsed_again.path
    assert [c.text for c in chunks] == [c.text for c in chunks_again]
    np.testing.assert_array_equal(moved, moved_again)
    np.testing.assert_allclose(np.linalg.norm(moved, axis=1), 1.0, rtol=1e-5)
    similarity = (moved * vectors).sum(axis=1)
    assert (similarity > 0.8).all() and (similarity < 0.999).all()  # near the original, not it
    _, _, _, other_copy, _ = scale_bench.make_copy(source, 4, 0)
    assert not np.array_equal(moved, other_copy)


def test_perturb_drops_and_swaps_words_but_keeps_a_word():
    text = " ".join(f"w{i}" for i in range(100))
    changed = scale_bench.perturb(text, random.Random(1))
    assert changed != text and 60 < len(changed.split()) < 100
    assert scale_bench.perturb("single", random.Random(1)) == "single"


def _two_abstracts():
    rng = np.random.default_rng(2)
    vectors = [rng.normal(size=(count, 384)).astype(np.float32) for count in (2, 1)]
    vectors = [v / np.linalg.norm(v, axis=1, keepdims=True) for v in vectors]
    return scale_bench.Source(
        [("/notes", "a.md", "markdown", "A", "v1/128"), ("/notes", "b.md", "markdown", "B", "v1/128")],
        [
            [(0, "", "a1 a2 a3 a4 a5 a6", 8), (1, "", "a7 a8 a9 a10", 6)],
            [(0, "", "b1 b2 b3 b4", 6)],
        ],
        vectors,
    )


def test_a_mixed_chunk_is_half_of_each_abstract_and_lies_between_them():
    source = _two_abstracts()
    _, parsed, chunks, mixed, _ = scale_bench.make_copy(source, 5, 0, "mix")
    assert parsed.path == "mix5/a.md"
    assert [c.text for c in chunks] == ["a1 a2 a3 b3 b4", "a7 a8 b3 b4"]  # the partner's one chunk, twice
    assert [c.token_count for c in chunks] == [7, 6]
    np.testing.assert_allclose(np.linalg.norm(mixed, axis=1), 1.0, rtol=1e-5)
    own = (mixed * source.vectors[0]).sum(axis=1)
    partner = mixed @ source.vectors[1][0]
    # Random 384-d unit vectors are nearly orthogonal: a mix with weights 0.35-0.65 is ~0.5-0.9 to each.
    assert (own > 0.4).all() and (partner > 0.4).all() and (own < 0.95).all() and (partner < 0.95).all()
    _, again, chunks_again, mixed_again, _ = scale_bench.make_copy(source, 5, 0, "mix")
    assert [c.text for c in chunks_again] == [c.text for c in chunks]
    np.testing.assert_array_equal(mixed, mixed_again)


def test_a_document_is_mixed_with_another_one_spread_over_the_corpus():
    partners = [scale_bench.partner_of(copy, 3, 100) for copy in range(1, 201)]
    assert 3 not in partners
    assert len(set(partners)) > 80  # not the same few partners every round
    assert scale_bench.partner_of(1, 0, 1) == 0  # one document: nothing else to mix it with


def test_hnsw_storage_parameters_replace_the_catalog_s_own():
    plain = (
        "CREATE INDEX chunks_embedding_space_1 ON pgrecall.chunks USING hnsw "
        "(((embedding)::vector(384)) vector_cosine_ops) WHERE (embedding_space_id = 1)"
    )
    built = scale_bench.with_storage(plain, "m=24,ef_construction=100")
    assert built == (
        "CREATE INDEX chunks_embedding_space_1 ON pgrecall.chunks USING hnsw "
        "(((embedding)::vector(384)) vector_cosine_ops) WITH (m='24', ef_construction='100') "
        "WHERE (embedding_space_id = 1)"
    )
    assert scale_bench.with_storage(built, "m=16") == built.replace("m='24', ef_construction='100'", "m='16'")
    assert scale_bench.with_storage(plain, None) == plain
