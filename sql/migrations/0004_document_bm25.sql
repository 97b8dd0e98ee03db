-- BM25 at the document level: a note is the unit BM25 was designed for, and a
-- note split into chunks must not lose the evidence spread across them. The
-- keyword arm scores documents and returns each one's best chunk.
ALTER TABLE pgrecall.documents ADD COLUMN term_count bigint NOT NULL DEFAULT 0;
ALTER TABLE pgrecall.term_stats ADD COLUMN document_df integer NOT NULL DEFAULT 0;
ALTER TABLE pgrecall.corpus_stats ADD COLUMN document_count bigint NOT NULL DEFAULT 0;

UPDATE pgrecall.documents d
SET term_count = s.total
FROM (SELECT document_id, sum(term_count) AS total FROM pgrecall.chunks GROUP BY document_id) s
WHERE s.document_id = d.id;

UPDATE pgrecall.term_stats t
SET document_df = s.documents
FROM (
    SELECT p.term, count(DISTINCT c.document_id) AS documents
    FROM pgrecall.postings p JOIN pgrecall.chunks c ON c.id = p.chunk_id
    GROUP BY p.term
) s
WHERE s.term = t.term;

UPDATE pgrecall.corpus_stats
SET document_count = (SELECT count(DISTINCT document_id) FROM pgrecall.chunks);

DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'pgrecall_reader') THEN
        GRANT SELECT ON pgrecall.documents, pgrecall.term_stats, pgrecall.corpus_stats TO pgrecall_reader;
    END IF;
END
$$;
