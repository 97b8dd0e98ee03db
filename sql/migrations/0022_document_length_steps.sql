-- A document's length as its postings carry it, in steps, and each chunk's write key: what lets
-- an append to a long document write only its new chunks.
--
-- Postings carry their document's length (0014), so every write that changes a document's
-- length rewrote all its kept postings: one entry appended to a 1,442-chunk journal rewrote its
-- ~100k postings, most of the append's time. A posting now carries the length rounded down to
-- its six leading bits (exact below 64, at most 1/32 short above), as Lucene keeps document
-- lengths in one byte (SmallFloat.intToByte4, four leading bits): the kept postings change
-- only when the length crosses a step, every 1.6-3.1 % of growth.
-- documents.term_count stays exact (the corpus' average length is summed from it).
--
-- The function is the one place the rounding is written; writers call it, the search side
-- reads postings only. The table is rebuilt as in 0014 (one write per row, not two).
-- vacuum after: pgrecall.postings
CREATE FUNCTION pgrecall.document_length_step(length bigint) RETURNS bigint
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
    shift integer := 0;
BEGIN
    WHILE (length >> shift) >= 64 LOOP
        shift := shift + 1;
    END LOOP;
    RETURN (length >> shift) << shift;
END
$$;

COMMENT ON FUNCTION pgrecall.document_length_step(bigint) IS
'A document length as postings carry it: its six leading bits (exact below 64).';

-- Each chunk row's write key (pgrecall.worker.store.write_key): a digest of everything a write
-- derives the row from (text, heading, keyword text, text search configuration, vector). A new
-- version of the document keeps a row of an equal key instead of writing it again. NULL on
-- rows written before: they are written again once.
ALTER TABLE pgrecall.chunks ADD COLUMN write_key text;

LOCK TABLE pgrecall.documents, pgrecall.chunks, pgrecall.postings IN SHARE MODE;

CREATE TABLE pgrecall.postings_0022 (
    term text NOT NULL,
    chunk_id bigint NOT NULL,
    tf integer NOT NULL,
    impact real NOT NULL,
    document_id bigint NOT NULL,
    chunk_length integer NOT NULL,
    document_length bigint NOT NULL
);

INSERT INTO pgrecall.postings_0022 (term, chunk_id, tf, impact, document_id, chunk_length, document_length)
SELECT term, chunk_id, tf, impact, document_id, chunk_length, pgrecall.document_length_step(document_length)
FROM pgrecall.postings;

DROP TABLE pgrecall.postings;
ALTER TABLE pgrecall.postings_0022 RENAME TO postings;

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
'The document''s length in lexemes in steps (pgrecall.document_length_step of pgrecall.documents.term_count), '
'for document-level BM25; written with the document''s chunks, and again when the step changes.';

ANALYZE pgrecall.postings;

DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'pgrecall_reader') THEN
        GRANT SELECT ON pgrecall.postings TO pgrecall_reader;
    END IF;
END
$$;
