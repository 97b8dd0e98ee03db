"""pgrecall.api.keyword ranks postings as the keyword arm's SQL did, computed here the plain way.

The reference below follows the SQL's definition step by step with dicts and sorted(): a
document's term frequency summed over its chunks, document-level BM25 summed over terms, every
document that can make the list (ties at the cut too), each one's best chunk by chunk-level
BM25 (equal scores: the smaller id), ordered by score then chunk id. (Against the SQL itself
over SciFact and GermanQuAD: tests/integration/test_keyword_arm.py.)
"""

from __future__ import annotations

import dataclasses
import random
import struct
from collections import defaultdict

import numpy as np
import pytest

from pgrecall import bm25
from pgrecall.api.keyword import Postings, TermPostings, TermRow, int8_array, pack, rank

K1, B = bm25.K1, bm25.B


def _reference(terms: list[TermPostings], limit: int) -> list[tuple[int, float]]:
    document_tf: dict[tuple[int, int], float] = defaultdict(float)
    document_length: dict[int, float] = {}
    for t, term in enumerate(terms):
        for document, tf, length in zip(term.document_ids, term.tfs, term.document_lengths, strict=True):
            document_tf[int(document), t] += float(tf)
            document_length[int(document)] = float(length)
    scores: dict[int, float] = defaultdict(float)
    for (document, t), tf in sorted(document_tf.items(), key=lambda item: item[0][1]):
        term = terms[t]
        scores[document] += (
            term.document_idf
            * tf
            * (K1 + 1)
            / (tf + K1 * (1 - B + B * document_length[document] / term.average_document_length))
        )
    if not scores:
        return []
    ordered = sorted(scores.values(), reverse=True)
    cut = ordered[min(limit, len(ordered)) - 1]
    top = {document for document, score in scores.items() if score >= cut}
    chunk_scores: dict[int, float] = defaultdict(float)
    chunk_document: dict[int, int] = {}
    for term in terms:
        for chunk, document, tf, length in zip(
            term.chunk_ids, term.document_ids, term.tfs, term.chunk_lengths, strict=True
        ):
            if int(document) in top:
                chunk_scores[int(chunk)] += (
                    term.chunk_idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / term.average_chunk_length))
                )
                chunk_document[int(chunk)] = int(document)
    best: dict[int, int] = {}
    for chunk in sorted(chunk_scores, key=lambda c: (-chunk_scores[c], c)):
        best.setdefault(chunk_document[chunk], chunk)
    listed = sorted(((chunk, scores[document]) for document, chunk in best.items()), key=lambda hit: (-hit[1], hit[0]))
    return listed[:limit]


def _corpus(rng: random.Random, documents: int, chunks_per_document: int) -> dict[int, tuple[int, int, int]]:
    """chunk id -> (document id, chunk length, document length); chunk ids not in document order."""
    ids = rng.sample(range(1, 10 * documents * chunks_per_document), documents * chunks_per_document)
    corpus = {}
    for document in range(documents):
        mine = ids[document * chunks_per_document : (document + 1) * chunks_per_document]
        lengths = [rng.choice([40, 80, 120, 200]) for _ in mine]
        for chunk, length in zip(mine, lengths, strict=True):
            corpus[chunk] = (1000 + document, length, sum(lengths))
    return corpus


def _term(rng: random.Random, corpus: dict, postings: int, tfs=(1, 1, 2, 3)) -> TermPostings:
    chunks = rng.sample(sorted(corpus), postings)
    return TermPostings(
        chunk_idf=rng.uniform(0.5, 6),
        document_idf=rng.uniform(0.5, 6),
        average_chunk_length=100.0,
        average_document_length=rng.choice([300.0, 450.0]),
        chunk_ids=np.array(chunks, dtype=np.int64),
        document_ids=np.array([corpus[c][0] for c in chunks], dtype=np.int64),
        tfs=np.array([rng.choice(tfs) for _ in chunks], dtype=np.float64),
        chunk_lengths=np.array([corpus[c][1] for c in chunks], dtype=np.float64),
        document_lengths=np.array([corpus[c][2] for c in chunks], dtype=np.float64),
    )


def _same(expected: list[tuple[int, float]], actual: list[tuple[int, float]]) -> None:
    assert [chunk for chunk, _ in actual] == [chunk for chunk, _ in expected]
    assert [score for _, score in actual] == pytest.approx([score for _, score in expected], rel=0, abs=1e-9)


@pytest.mark.parametrize("seed", range(20))
def test_postings_rank_as_the_definition_says(seed):
    rng = random.Random(seed)
    corpus = _corpus(rng, documents=rng.choice([5, 40, 200]), chunks_per_document=rng.choice([1, 3, 6]))
    terms = [_term(rng, corpus, rng.randint(1, min(300, len(corpus)))) for _ in range(rng.randint(1, 6))]
    for limit in (1, 10, 100):
        _same(_reference(terms, limit), rank(Postings.of_terms(terms), limit, K1, B))


def test_ties_at_the_cut_all_take_part_and_equal_scores_order_by_chunk_id():
    # Six one-chunk documents with one posting each of equal tf and lengths: six equal scores.
    corpus = {chunk: (100 + chunk, 50, 50) for chunk in (31, 7, 19, 3, 42, 11)}
    rng = random.Random(1)
    term = _term(rng, corpus, 6, tfs=(2,))
    hits = rank(Postings.of_terms([term]), 4, K1, B)
    assert [chunk for chunk, _ in hits] == [3, 7, 11, 19]
    assert len({score for _, score in hits}) == 1
    _same(_reference([term], 4), hits)


def test_a_document_scores_its_term_frequencies_summed_over_its_chunks_and_lists_its_best_chunk():
    # Document 1: the term twice in chunk 10 and once in chunk 11; document 2: three times in chunk 20.
    term = TermPostings(
        chunk_idf=2.0,
        document_idf=3.0,
        average_chunk_length=100.0,
        average_document_length=100.0,
        chunk_ids=np.array([10, 11, 20], dtype=np.int64),
        document_ids=np.array([1, 1, 2], dtype=np.int64),
        tfs=np.array([2.0, 1.0, 3.0]),
        chunk_lengths=np.array([100.0, 100.0, 100.0]),
        document_lengths=np.array([100.0, 100.0, 100.0]),
    )
    hits = rank(Postings.of_terms([term]), 10, K1, B)
    both = 3.0 * 3 * (K1 + 1) / (3 + K1)  # the same summed frequency and length: equal document scores
    assert hits == [(10, pytest.approx(both)), (20, pytest.approx(both))]


def test_no_postings_rank_nothing():
    empty = np.empty(0, dtype=np.int64)
    term = TermPostings(1.0, 1.0, 1.0, 1.0, empty, empty, empty.astype(float), empty.astype(float), empty.astype(float))
    assert rank(Postings.of_terms([]), 10, K1, B) == []
    assert rank(Postings.of_terms([term]), 10, K1, B) == []


def _array_send(values: list[int]) -> bytes:
    """bigint[] as PostgreSQL's array_send writes it (20 = int8's type oid)."""
    header = struct.pack(">iiiii", 1, 0, 20, len(values), 1)
    return header + b"".join(struct.pack(">iq", 8, value) for value in values)


def test_binary_arrays_read_as_their_values_and_tf_travels_beside_the_chunk_length():
    assert int8_array(_array_send([5, -1, 2**40])).tolist() == [5, -1, 2**40]
    assert int8_array(struct.pack(">iii", 0, 0, 20)).tolist() == []  # an empty array has no dimension
    rows = [
        TermRow(
            1.5,
            2.5,
            90.0,
            300.0,
            chunk_ids=_array_send([7, 8]),
            document_ids=_array_send([1, 1]),
            lengths=_array_send([pack(3, 120, 250), pack(1, 130, 250)]),
        ),
        TermRow(
            0.5,
            0.75,
            90.0,
            300.0,
            chunk_ids=_array_send([7]),
            document_ids=_array_send([1]),
            lengths=_array_send([pack(2, 120, 250)]),
        ),
    ]
    postings = Postings.from_rows(rows)
    assert postings.tfs.tolist() == [3.0, 1.0, 2.0] and postings.chunk_lengths.tolist() == [120.0, 130.0, 120.0]
    assert postings.document_lengths.tolist() == [250.0] * 3 and postings.chunk_ids.tolist() == [7, 8, 7]
    assert postings.terms.tolist() == [0, 0, 1] and postings.document_idfs.tolist() == [2.5, 0.75]
    assert rank(Postings.from_rows([]), 10, K1, B) == []  # no term of the query is in the index
    # Each count keeps its own field, at its largest too.
    largest = Postings.from_rows(
        [TermRow(1.0, 1.0, 1.0, 1.0, _array_send([1]), _array_send([1]), _array_send([pack(32767, 65535, 2**32 - 1)]))]
    )
    assert (largest.tfs.tolist(), largest.chunk_lengths.tolist(), largest.document_lengths.tolist()) == (
        [32767.0],
        [65535.0],
        [2.0**32 - 1],
    )
    with pytest.raises(ValueError, match="without nulls"):
        int8_array(struct.pack(">iiiii", 1, 1, 20, 1, 1) + struct.pack(">i", -1))


def test_document_ids_too_large_for_one_sort_key_rank_the_same():
    # Ids near 2**62 leave no room for the term in one int64 key: the two-key sort takes over.
    rng = random.Random(7)
    corpus = _corpus(rng, documents=40, chunks_per_document=3)
    terms = [_term(rng, corpus, 60) for _ in range(4)]
    shifted = [dataclasses.replace(term, document_ids=term.document_ids + 2**62) for term in terms]
    expected = _reference(terms, 10)
    _same(expected, rank(Postings.of_terms(shifted), 10, K1, B))
    _same(expected, rank(Postings.of_terms(terms), 10, K1, B))
