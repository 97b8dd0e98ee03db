-- Documents and their chunks: vectors for the dense arm, lexemes for the keyword arm.
CREATE EXTENSION IF NOT EXISTS vector;

CREATE TABLE pgrecall.documents (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    source_root text NOT NULL,
    path text NOT NULL,                  -- relative to source_root; "file#uuid" for a conversation
    parent_id bigint REFERENCES pgrecall.documents (id) ON DELETE CASCADE,
    kind text NOT NULL,                  -- markdown, text, claude_export, claude_conversation, unsupported
    content_hash text,
    size_bytes bigint,
    mtime timestamptz,
    title text,
    metadata jsonb NOT NULL DEFAULT '{}',
    chunk_count integer NOT NULL DEFAULT 0,
    indexed_at timestamptz,
    error text,                          -- why the last attempt failed; NULL when it succeeded
    error_stage text,                    -- read, parse, chunk, embed, store
    UNIQUE (source_root, path)
);
CREATE INDEX documents_parent_id ON pgrecall.documents (parent_id) WHERE parent_id IS NOT NULL;
CREATE INDEX documents_failed ON pgrecall.documents (id) WHERE error IS NOT NULL;

CREATE TABLE pgrecall.chunks (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    document_id bigint NOT NULL REFERENCES pgrecall.documents (id) ON DELETE CASCADE,
    ordinal integer NOT NULL,
    heading text NOT NULL DEFAULT '',    -- "# A > ## B"
    text text NOT NULL,
    token_count integer NOT NULL,        -- word pieces the model saw, heading included
    embedding vector(384) NOT NULL,
    fts tsvector NOT NULL,
    term_count integer NOT NULL,         -- lexeme occurrences: the document length of BM25
    metadata jsonb NOT NULL DEFAULT '{}',
    UNIQUE (document_id, ordinal)
);
CREATE INDEX chunks_embedding_hnsw ON pgrecall.chunks USING hnsw (embedding vector_cosine_ops);
CREATE INDEX chunks_fts ON pgrecall.chunks USING gin (fts);

-- BM25 inside PostgreSQL: an inverted index whose per-term lists are ordered by
-- impact, so the keyword arm reads a bounded prefix of each list instead of
-- scoring every chunk that merely contains a common word.
CREATE TABLE pgrecall.postings (
    term text NOT NULL,
    chunk_id bigint NOT NULL REFERENCES pgrecall.chunks (id) ON DELETE CASCADE,
    tf integer NOT NULL,
    impact real NOT NULL                 -- BM25's term-frequency part at write time; orders the list
);
CREATE INDEX postings_term_impact ON pgrecall.postings (term, impact DESC) INCLUDE (chunk_id, tf);
CREATE INDEX postings_chunk_id ON pgrecall.postings (chunk_id);

CREATE TABLE pgrecall.term_stats (
    term text PRIMARY KEY,
    df integer NOT NULL                  -- chunks containing the term
);

CREATE TABLE pgrecall.corpus_stats (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    chunk_count bigint NOT NULL DEFAULT 0,
    term_total bigint NOT NULL DEFAULT 0
);
INSERT INTO pgrecall.corpus_stats DEFAULT VALUES;
