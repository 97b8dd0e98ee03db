"""BM25 parameters shared by the writer (posting impacts) and the reader (scores).

The keyword arm scores documents (term frequencies summed over their chunks)
and returns each document's best chunk; see sql/queries/search.sql.

k1 = 0.9 and b = 0.4 are Pyserini's defaults, the configuration behind the
published BEIR "BM25 flat" baselines; they were not tuned on our eval data.
"""

K1 = 0.9
B = 0.4
# Average chunk length assumed for impacts written before any statistics exist.
DEFAULT_AVERAGE_LENGTH = 100.0
