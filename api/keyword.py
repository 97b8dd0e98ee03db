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

import numpy as np

# One element of a binary int8 array (array_send): its length (always 8), then its value.
_INT8_ELEMENT = np.dtype([("length", ">i4"), ("value", ">i8")])
_ONE_DIMENSION_HEADER = 20  # ndim, has-nulls flag, element type, then the dimension's size and lower bound
TF_SHIFT = 32  # a posting's tf and chunk length travel as one int8: tf << 32 | chunk length


def int8_array(buffer: bytes) -> np.ndarray:
    """The values of a one-dimensional bigint[] without nulls in PostgreSQL's binary format."""
    dimensions, has_nulls = struct.unpack_from(">ii", buffer)
    if dimensions == 0:
        return np.empty(0, dtype=np.int64)
    if dimensions != 1 or has_nulls:
        raise ValueError(f"expected a one-dimensional array without nulls, got {dimensions} dimensions")
    return np.frombuffer(buffer, dtype=_INT8_ELEMENT, offset=_ONE_DIMENSION_HEADER)["value"].astype(np.int64)


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

    @classmethod
    def from_row(
        cls,
        chunk_idf: float,
        document_idf: float,
        average_chunk_length: float,
        average_document_length: float,
        chunk_ids: bytes,
        document_ids: bytes,
        document_lengths: bytes,
        tf_chunk_lengths: bytes,
    ) -> TermPostings:
        """From a row of keyword_postings: the postings' columns as array_send buffers."""
        packed = int8_array(tf_chunk_lengths)
        return cls(
            chunk_idf,
            document_idf,
            average_chunk_length,
            average_document_length,
            chunk_ids=int8_array(chunk_ids),
            document_ids=int8_array(document_ids),
            tfs=(packed >> TF_SHIFT).astype(np.float64),
            chunk_lengths=(packed & ((1 << TF_SHIFT) - 1)).astype(np.float64),
            document_lengths=int8_array(document_lengths).astype(np.float64),
        )


def _group_starts(*sorted_keys: np.ndarray) -> np.ndarray:
    """The positions where a run of equal keys begins, over arrays sorted by them together."""
    changed = np.zeros(len(sorted_keys[0]), dtype=bool)
    changed[0] = True
    for key in sorted_keys:
        changed[1:] |= key[1:] != key[:-1]
    return np.flatnonzero(changed)


def rank(terms: Sequence[TermPostings], limit: int, k1: float, b: float) -> list[tuple[int, float]]:
    """(chunk id, its document's BM25 score) of the best documents' best chunks, best first."""
    terms = [term for term in terms if len(term.chunk_ids)]
    if not terms or limit <= 0:
        return []
    term_of = np.repeat(np.arange(len(terms)), [len(term.chunk_ids) for term in terms])
    chunk_idf = np.array([term.chunk_idf for term in terms], dtype=np.float64)
    document_idf = np.array([term.document_idf for term in terms], dtype=np.float64)
    chunk_average = np.array([term.average_chunk_length for term in terms], dtype=np.float64)
    document_average = np.array([term.average_document_length for term in terms], dtype=np.float64)

    # Postings in (document, term) order.
    document_ids = np.concatenate([term.document_ids for term in terms])
    order = np.lexsort((term_of, document_ids))
    document_ids, term_of = document_ids[order], term_of[order]
    chunk_ids = np.concatenate([term.chunk_ids for term in terms])[order]
    tfs = np.concatenate([term.tfs for term in terms])[order]
    chunk_lengths = np.concatenate([term.chunk_lengths for term in terms])[order]
    document_lengths = np.concatenate([term.document_lengths for term in terms])[order]

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
    by_chunk = np.argsort(kept_chunks, kind="stable")
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
