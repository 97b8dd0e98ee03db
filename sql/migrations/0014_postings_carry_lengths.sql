-- The keyword arm from the postings alone. Each posting the arm reads needed
-- its chunk's row (for document_id and the chunk's length) and its document's
-- row (for the document's length): ~16 terms x 1,000 postings meant ~16k
-- random chunk lookups and a hash of the whole documents table per query, the
-- cost that grew with the index. A posting now carries the three values, and
-- the impact index includes them, so a term's top postings come from an
-- index-only scan and a search touches neither table (filtered searches still
-- join documents for the filter).
--
-- They never go stale: a document's chunks, its postings and its term_count
-- are only ever written together (pgrecall.worker.store.write_document deletes
-- the chunks, cascading to their postings, and writes all three again in one
-- transaction); a chunk is never changed in place.
--
-- chunk_id is a key column of the new index: among postings of equal impact
-- the prefix of `depth` a term reads is the lowest chunk ids, a function of the
-- corpus rather than of where rows happen to lie on disk (the heap order the
-- old index fell back on).
--
-- The table is rebuilt rather than updated in place: an UPDATE of every row
-- would write each row and index entry twice over; this writes them once.
-- Writers wait (the locks are taken in the order a writer takes them).
-- pgrecall.migrate vacuums the new table once the migration has committed:
-- vacuum after: pgrecall.postings
LOCK TABLE pgrecall.documents, pgrecall.chunks, pgrecall.postings IN SHARE MODE;

CREATE TABLE pgrecall.postings_0014 (
    term text NOT NULL,
    chunk_id bigint NOT NULL,
    tf integer NOT NULL,
    impact real NOT NULL,
    document_id bigint NOT NULL,
    chunk_length integer NOT NULL,
    document_length bigint NOT NULL
);

INSERT INTO pgrecall.postings_0014 (term, chunk_id, tf, impact, document_id, chunk_length, document_length)
SELECT p.term, p.chunk_id, p.tf, p.impact, c.document_id, c.term_count, d.term_count
FROM pgrecall.postings p
JOIN pgrecall.chunks c ON c.id = p.chunk_id
JOIN pgrecall.documents d ON d.id = c.document_id;

DROP TABLE pgrecall.postings;
ALTER TABLE pgrecall.postings_0014 RENAME TO postings;

ALTER TABLE pgrecall.postings
    ADD CONSTRAINT postings_chunk_id_fkey FOREIGN KEY (chunk_id) REFERENCES pgrecall.chunks (id) ON DELETE CASCADE;
CREATE INDEX postings_term_impact ON pgrecall.postings (term, impact DESC, chunk_id)
    INCLUDE (tf, document_id, chunk_length, document_length);
CREATE INDEX postings_chunk_id ON pgrecall.postings (chunk_id);

COMMENT ON COLUMN pgrecall.postings.impact IS
'BM25''s term-frequency part at write time; orders a term''s list (ties by chunk_id) for the keyword arm.';
COMMENT ON COLUMN pgrecall.postings.document_id IS 'The chunk''s document (pgrecall.chunks.document_id).';
COMMENT ON COLUMN pgrecall.postings.chunk_length IS
'The chunk''s length in lexemes (pgrecall.chunks.term_count), for chunk-level BM25.';
COMMENT ON COLUMN pgrecall.postings.document_length IS
'The document''s length in lexemes (pgrecall.documents.term_count), for document-level BM25; '
'written with the document''s chunks, so always equal to it.';

ANALYZE pgrecall.postings;

DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'pgrecall_reader') THEN
        GRANT SELECT ON pgrecall.postings TO pgrecall_reader;
    END IF;
END
$$;
