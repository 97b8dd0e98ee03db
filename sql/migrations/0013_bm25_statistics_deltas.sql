-- BM25 statistics that concurrent writers do not serialise on. A writer used to
-- update the one corpus_stats row and the term_stats row of every word it wrote,
-- so two writers sharing a word (every pair does: "the" is everywhere) waited on
-- each other's row locks until commit. Now a writer only INSERTs what its
-- transaction changes into the two tables below, which have no unique
-- constraint to contend on. The statistics are the base rows plus the sum of
-- the delta rows (the keyword arm reads both, for the query's few terms);
-- pgrecall.worker.statistics folds committed deltas into the base, one folder at
-- a time, and prunes terms whose count reached zero.
CREATE TABLE pgrecall.term_stat_deltas (
    term text NOT NULL,
    df integer NOT NULL,                 -- change in chunks containing the term
    document_df integer NOT NULL         -- change in documents containing it
);
CREATE INDEX term_stat_deltas_term ON pgrecall.term_stat_deltas (term) INCLUDE (df, document_df);

CREATE TABLE pgrecall.corpus_stat_deltas (
    chunk_count bigint NOT NULL,
    term_total bigint NOT NULL,
    document_count bigint NOT NULL
);

COMMENT ON TABLE pgrecall.term_stat_deltas IS
'Changes to pgrecall.term_stats not yet folded into it: a term''s statistics are its term_stats row '
'plus the sum of its rows here. Written by the write path, folded by pgrecall.worker.statistics.';
COMMENT ON TABLE pgrecall.corpus_stat_deltas IS
'Changes to pgrecall.corpus_stats not yet folded into it: the totals are its row plus the sum of these.';

DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'pgrecall_reader') THEN
        GRANT SELECT ON pgrecall.term_stat_deltas, pgrecall.corpus_stat_deltas TO pgrecall_reader;
    END IF;
END
$$;
