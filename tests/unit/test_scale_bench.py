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
