"""The keyword arm's ranking: BM25 over the postings the query keyword_postings read.

The database reads each query term's first `depth` postings of its impact-ordered list
(an index-only scan) and sends them as binary arrays; they are scored here, with numpy.
Scoring them in SQL (issue 24's profile, SciFact, 300 queries) took about three quarters of
the arm's time in the executor's aggregations (a hash aggregate by document and term, one by
document, one by chunk, their joins and sorts), for a few thousand rows a query; numpy does
the same over arrays in a fraction of that.

The ranking is the one the SQL computed (tests/integration/test_keyword_arm.py keeps the
earlier queries as oracles), with the same expressions in the same order of operations:
  - a document's frequency of a term is the sum of the term's frequencies over the document's
    chunks among the postings read; its document-level BM25 uses the document's length and the
    average document length of its language; a document's score is the sum over its terms;
  - every document that can make the list takes part, ties at the cut included
    (FETCH FIRST limit ROWS WITH TIES);
  - each of them contributes its best chunk by chunk-level BM25 (equal scores: the smaller id);
  - the list is ordered by document score, then chunk id, and cut at `limit`.
Sums may add their terms in another order than the executor did: scores agree to the last bits.
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

# One element of a binary array (array_send): its length (always 8), then its value.
_INT8_ELEMENT = np.dtype([("length", ">i4"), ("value", ">i8")])
_ONE_DIMENSION_HEADER = 20  # ndim, has-nulls flag, element type, then the dimension's size and lower bound
# A posting's tf, chunk length and document length travel as one int8 (keyword_postings' lengths).
TF_SHIFT, CHUNK_LENGTH_SHIFT = 48, 32
CHUNK_LENGTH_MASK, DOCUMENT_LENGTH_MASK = (1 << 16) - 1, (1 << 32) - 1


def pack(tf: int, chunk_length: int, document_length: int) -> int:
    """What keyword_postings sends of a posting's three counts (each within its field)."""
    return tf << TF_SHIFT | chunk_length << CHUNK_LENGTH_SHIFT | document_length


def unpack(lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """tf, chunk length and document length (float64 each) of packed postings."""
    return (
        (lengths >> TF_SHIFT).astype(np.float64),
        ((lengths >> CHUNK_LENGTH_SHIFT) & CHUNK_LENGTH_MASK).astype(np.float64),
        (lengths & DOCUMENT_LENGTH_MASK).astype(np.float64),
    )


def int8_array(buffer: bytes) -> np.ndarray:
    """The values of a one-dimensional bigint[] without nulls in PostgreSQL's binary format."""
    return _joined_int8_arrays([buffer])[0]


@dataclasses.dataclass(frozen=True)
class TermPostings:
    """One query term (in one language) with the statistics its scoring needs and its postings read."""

    chunk_idf: float
    document_idf: float
    average_chunk_length: float
    average_document_length: float
    chunk_ids: np.ndarray  # int64, one per posting
    document_ids: np.ndarray  # int64
    tfs: np.ndarray  # float64: the term's frequency in the chunk
    chunk_lengths: np.ndarray  # float64
    document_lengths: np.ndarray  # float64: the same on all of a document's postings


class TermRow(NamedTuple):
    """A row of keyword_postings: one query term (in one language), its statistics and its postings
    read, as array_send buffers of bigint[] (lengths: see pack)."""

    chunk_idf: float
    document_idf: float
    average_chunk_length: float
    average_document_length: float
    chunk_ids: bytes
    document_ids: bytes
    lengths: bytes


def _joined_int8_arrays(buffers: Sequence[bytes]) -> tuple[np.ndarray, list[int]]:
    """The values of several one-dimensional bigint[] without nulls (array_send), one after another,
    and how many each holds: one numpy read for them all."""
    counts = []
    for buffer in buffers:
        dimensions, has_nulls = struct.unpack_from(">ii", buffer)
        if dimensions == 0:
            counts.append(0)
            continue
        if dimensions != 1 or has_nulls:
            raise ValueError(f"expected a one-dimensional array without nulls, got {dimensions} dimensions")
        counts.append((len(buffer) - _ONE_DIMENSION_HEADER) // _INT8_ELEMENT.itemsize)
    joined = b"".join(buffer[_ONE_DIMENSION_HEADER:] for buffer, count in zip(buffers, counts, strict=True) if count)
    return np.frombuffer(joined, dtype=_INT8_ELEMENT)["value"].astype(np.int64), counts


@dataclasses.dataclass(frozen=True)
class Postings:
    """Every query term's statistics (one value per term, by its position) and every posting read
    (one value per posting, with its term's position in `terms`), in the order of the terms."""

    chunk_idfs: np.ndarray  # float64, one per term
    document_idfs: np.ndarray
    average_chunk_lengths: np.ndarray
    average_document_lengths: np.ndarray
    terms: np.ndarray  # int64, one per posting: the position of its term
    chunk_ids: np.ndarray  # int64
    document_ids: np.ndarray  # int64
    tfs: np.ndarray  # float64: the term's frequency in the chunk
    chunk_lengths: np.ndarray  # float64
    document_lengths: np.ndarray  # float64: the same on all of a document's postings

    @classmethod
    def from_rows(cls, rows: Sequence[TermRow]) -> Postings:
        """From the rows of keyword_postings, a term each: each column's arrays read at once."""
        chunk_ids, counts = _joined_int8_arrays([row.chunk_ids for row in rows])
        tfs, chunk_lengths, document_lengths = unpack(_joined_int8_arrays([row.lengths for row in rows])[0])
        return cls(
            chunk_idfs=np.array([row.chunk_idf for row in rows], dtype=np.float64),
            document_idfs=np.array([row.document_idf for row in rows], dtype=np.float64),
            average_chunk_lengths=np.array([row.average_chunk_length for row in rows], dtype=np.float64),
            average_document_lengths=np.array([row.average_document_length for row in rows], dtype=np.float64),
            terms=np.repeat(np.arange(len(rows), dtype=np.int64), counts),
            chunk_ids=chunk_ids,
            document_ids=_joined_int8_arrays([row.document_ids for row in rows])[0],
            tfs=tfs,
            chunk_lengths=chunk_lengths,
            document_lengths=document_lengths,
        )

    @classmethod
    def of_terms(cls, terms: Sequence[TermPostings]) -> Postings:
        """The same postings given term by term, each term's position its place in `terms` (the
        form tests/unit/test_keyword_rank.py states its reference ranking in)."""

        def joined(name: str, dtype: type) -> np.ndarray:
            return (
                np.concatenate([getattr(term, name) for term in terms]).astype(dtype) if terms else np.empty(0, dtype)
            )

        return cls(
            chunk_idfs=np.array([term.chunk_idf for term in terms], dtype=np.float64),
            document_idfs=np.array([term.document_idf for term in terms], dtype=np.float64),
            average_chunk_lengths=np.array([term.average_chunk_length for term in terms], dtype=np.float64),
            average_document_lengths=np.array([term.average_document_length for term in terms], dtype=np.float64),
            terms=np.repeat(np.arange(len(terms), dtype=np.int64), [len(term.chunk_ids) for term in terms]),
            chunk_ids=joined("chunk_ids", np.int64),
            document_ids=joined("document_ids", np.int64),
            tfs=joined("tfs", np.float64),
            chunk_lengths=joined("chunk_lengths", np.float64),
            document_lengths=joined("document_lengths", np.float64),
        )


def _group_starts(*sorted_keys: np.ndarray) -> np.ndarray:
    """The positions where a run of equal keys begins, over arrays sorted by them together."""
    changed = np.zeros(len(sorted_keys[0]), dtype=bool)
    changed[0] = True
    for key in sorted_keys:
        changed[1:] |= key[1:] != key[:-1]
    return np.flatnonzero(changed)


def _argsort_pairs(ids: np.ndarray, terms: np.ndarray, term_count: int) -> np.ndarray:
    """The order of (id, term) pairs: by id, then term. One sort of one int64 key where the ids
    leave room for the term in it (0.12 against 0.19 ms for a SciFact query's postings by two
    keys), else by both."""
    if not len(ids):
        return np.empty(0, dtype=np.int64)
    if ids.min() >= 0 and ids.max() < np.iinfo(np.int64).max // term_count:
        return np.argsort(ids * term_count + terms)
    return np.lexsort((terms, ids))


def rank(postings: Postings, limit: int, k1: float, b: float) -> list[tuple[int, float]]:
    """(chunk id, its document's BM25 score) of the best documents' best chunks, best first."""
    if not len(postings.chunk_ids) or limit <= 0:
        return []
    chunk_idf, document_idf = postings.chunk_idfs, postings.document_idfs
    chunk_average, document_average = postings.average_chunk_lengths, postings.average_document_lengths

    # Postings in (document, term) order. Postings of one document and term (its chunks') may come
    # in any order: their tfs are whole numbers, whose sums are exact in any order, and the
    # chunk-level sums below add each chunk's terms in the order of a key unique per posting.
    document_ids = postings.document_ids
    order = _argsort_pairs(document_ids, postings.terms, len(chunk_idf))
    document_ids, term_of = document_ids[order], postings.terms[order]
    chunk_ids = postings.chunk_ids[order]
    tfs = postings.tfs[order]
    chunk_lengths = postings.chunk_lengths[order]
    document_lengths = postings.document_lengths[order]

    # Document-level BM25: a term's frequencies summed over the document's chunks.
    pairs = _group_starts(document_ids, term_of)
    tf = np.add.reduceat(tfs, pairs)
    term = term_of[pairs]
    pair_scores = (
        document_idf[term] * tf * (k1 + 1) / (tf + k1 * (1 - b + b * document_lengths[pairs] / document_average[term]))
    )
    pair_documents = document_ids[pairs]
    documents = _group_starts(pair_documents)
    document_scores = np.add.reduceat(pair_scores, documents)

    # Every document that can make the list, ties at the cut too.
    last = min(limit, len(documents)) - 1
    cut = -np.partition(-document_scores, last)[last]
    starts_document = np.zeros(len(document_ids), dtype=bool)
    starts_document[pairs[documents]] = True
    document_of_posting = np.cumsum(starts_document) - 1
    kept = (document_scores >= cut)[document_of_posting]

    # Their chunks by chunk-level BM25, summed over the chunk's terms.
    term = term_of[kept]
    tf = tfs[kept]
    posting_scores = (
        chunk_idf[term] * tf * (k1 + 1) / (tf + k1 * (1 - b + b * chunk_lengths[kept] / chunk_average[term]))
    )
    kept_chunks, kept_documents = chunk_ids[kept], document_of_posting[kept]
    by_chunk = _argsort_pairs(kept_chunks, term, len(chunk_idf))  # a chunk's terms in term order
    chunk_starts = _group_starts(kept_chunks[by_chunk])
    chunks = kept_chunks[by_chunk][chunk_starts]
    chunk_scores = np.add.reduceat(posting_scores[by_chunk], chunk_starts)
    chunk_documents = kept_documents[by_chunk][chunk_starts]

    # Each document's best chunk (equal scores: the smaller id), then the list.
    best_first = np.lexsort((chunks, -chunk_scores, chunk_documents))
    best = best_first[_group_starts(chunk_documents[best_first])]
    scores = document_scores[chunk_documents[best]]
    listed = np.lexsort((chunks[best], -scores))[:limit]
    return list(zip(chunks[best][listed].tolist(), scores[listed].tolist(), strict=True))
