-- Languages (issue 21): each document is analysed with its own language's text
-- search configuration, and BM25 scores it against the statistics of its
-- language alone. `language` is a PostgreSQL text search configuration name
-- (english, german, ..., simple); pgrecall.worker.language detects it.
--
-- Everything indexed before was analysed as english, so the new columns start
-- as english: no row is rewritten, only the indexes keyed by term are built
-- again with the language in front.
--
-- The lead's 0022 drops postings.document_length; this index carries what the
-- postings carry at this point.
LOCK TABLE pgrecall.documents, pgrecall.chunks, pgrecall.postings IN SHARE MODE;

ALTER TABLE pgrecall.documents ADD COLUMN language text;
ALTER TABLE pgrecall.chunks ADD COLUMN language text NOT NULL DEFAULT 'english';
ALTER TABLE pgrecall.chunks ALTER COLUMN language DROP DEFAULT;
UPDATE pgrecall.documents SET language = 'english' WHERE chunk_count > 0;

ALTER TABLE pgrecall.postings ADD COLUMN language text NOT NULL DEFAULT 'english';
ALTER TABLE pgrecall.postings ALTER COLUMN language DROP DEFAULT;
DROP INDEX pgrecall.postings_term_impact;
CREATE INDEX postings_term_impact ON pgrecall.postings (language, term, impact DESC, chunk_id)
    INCLUDE (tf, document_id, chunk_length, document_length);

ALTER TABLE pgrecall.term_stats ADD COLUMN language text NOT NULL DEFAULT 'english';
ALTER TABLE pgrecall.term_stats ALTER COLUMN language DROP DEFAULT;
ALTER TABLE pgrecall.term_stats DROP CONSTRAINT term_stats_pkey, ADD PRIMARY KEY (language, term);

ALTER TABLE pgrecall.term_stat_deltas ADD COLUMN language text NOT NULL DEFAULT 'english';
ALTER TABLE pgrecall.term_stat_deltas ALTER COLUMN language DROP DEFAULT;
DROP INDEX pgrecall.term_stat_deltas_term;
CREATE INDEX term_stat_deltas_term ON pgrecall.term_stat_deltas (language, term) INCLUDE (df, document_df);

-- One row per language instead of one for the corpus.
ALTER TABLE pgrecall.corpus_stats ADD COLUMN language text NOT NULL DEFAULT 'english';
ALTER TABLE pgrecall.corpus_stats ALTER COLUMN language DROP DEFAULT;
ALTER TABLE pgrecall.corpus_stats DROP CONSTRAINT corpus_stats_pkey, DROP COLUMN singleton;
ALTER TABLE pgrecall.corpus_stats ADD PRIMARY KEY (language);

ALTER TABLE pgrecall.corpus_stat_deltas ADD COLUMN language text NOT NULL DEFAULT 'english';
ALTER TABLE pgrecall.corpus_stat_deltas ALTER COLUMN language DROP DEFAULT;

COMMENT ON COLUMN pgrecall.documents.language IS
'The text search configuration its chunks were analysed with (english, german, ..., simple): detected '
'by pgrecall.worker.language or named by the front matter''s lang:/language:. NULL: no chunks.';
COMMENT ON COLUMN pgrecall.chunks.language IS 'Its document''s language when the chunk was written.';
COMMENT ON COLUMN pgrecall.postings.language IS
'The chunk''s language: a term''s list, and its statistics, are per language.';
COMMENT ON COLUMN pgrecall.corpus_stats.language IS 'The totals are per language (0024).';

ANALYZE pgrecall.postings;
