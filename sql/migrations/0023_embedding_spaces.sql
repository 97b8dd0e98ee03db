-- Vectors of any dimension, one HNSW index per embedding space.
--
-- pgvector's HNSW indexes vectors of one fixed dimension. The column holds vectors of any
-- dimension (`vector`, no typmod), each chunk names its space (embedding_space_id), and each
-- space has an index of its own: a partial expression index over
-- `embedding::vector(N)` WHERE embedding_space_id = K. The vector arm orders by the same
-- expression under the same predicate (sql/queries/search.sql), so a search in one space
-- reads that space's graph alone, however many other spaces the index holds: a re-embed to
-- another model (or backend) runs beside the old index and both stay fast.
--
-- The index of a space is made by the first writer of that space
-- (pgrecall.embedding_space_id below); the search side never writes. The existing 384-dimension
-- vectors stay as they are (no re-embedding): their spaces get rows here and their graph is
-- built again as the partial index of its space.

CREATE TABLE pgrecall.embedding_spaces (
    id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    space text NOT NULL UNIQUE,          -- as pgrecall.embedder_base.LocalEmbedder.space names it
    -- pgvector's HNSW takes vectors of at most 2,000 dimensions.
    dimensions integer NOT NULL CHECK (dimensions BETWEEN 1 AND 2000),
    created_at timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE pgrecall.embedding_spaces IS
'The embedding spaces the index has held, with the width of their vectors; each has an HNSW '
'index of its own on pgrecall.chunks, named chunks_embedding_space_<id>.';

-- No foreign key: the check of each inserted chunk would take a KEY SHARE lock on its space's
-- row, and concurrent writers of one space would pile multixacts onto that one row. Rows of
-- this table are never deleted.
ALTER TABLE pgrecall.chunks ADD COLUMN embedding_space_id integer;
COMMENT ON COLUMN pgrecall.chunks.embedding_space_id IS
'The space of this chunk''s vector (pgrecall.embedding_spaces.id), its document''s '
'embedding_space; NULL for a chunk of a document whose space was never recorded (before 0012).';

DROP INDEX pgrecall.chunks_embedding_hnsw;
-- Same type, no typmod: no rewrite of the table, the stored vectors are kept as they are.
ALTER TABLE pgrecall.chunks ALTER COLUMN embedding TYPE vector;

INSERT INTO pgrecall.embedding_spaces (space, dimensions)
SELECT DISTINCT embedding_space, 384   -- the only width the index could store until now
FROM pgrecall.documents
WHERE chunk_count > 0 AND embedding_space IS NOT NULL
ORDER BY embedding_space;

UPDATE pgrecall.chunks c SET embedding_space_id = s.id
FROM pgrecall.documents d
JOIN pgrecall.embedding_spaces s ON s.space = d.embedding_space
WHERE d.id = c.document_id;

-- The HNSW index of one space (made once, by the writer that brings the space in).
CREATE FUNCTION pgrecall.create_embedding_space_index(space_id integer, dimensions integer) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format(
        'CREATE INDEX IF NOT EXISTS %I ON pgrecall.chunks USING hnsw ((embedding::vector(%s)) vector_cosine_ops) '
        'WHERE embedding_space_id = %s',
        'chunks_embedding_space_' || space_id, dimensions, space_id);
END
$$;

-- The id of a space, added (with its index) when it is new. Called by a writer as the first
-- statement of the transaction that writes the space's chunks: a writer that waits here for
-- another one holds no lock on the chunks yet, so the CREATE INDEX of the other one (which
-- waits for the writers already under way) cannot deadlock with it.
CREATE FUNCTION pgrecall.embedding_space_id(space_name text, space_dimensions integer) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    found_id integer;
    found_dimensions integer;
BEGIN
    SELECT id, dimensions INTO found_id, found_dimensions FROM pgrecall.embedding_spaces WHERE space = space_name;
    IF found_id IS NULL THEN
        PERFORM pg_advisory_xact_lock(1885827699);  -- 0x70677273, "pgrs" (pgrecall.locks)
        -- A new snapshot: a writer that added this space while this one waited is seen.
        SELECT id, dimensions INTO found_id, found_dimensions FROM pgrecall.embedding_spaces WHERE space = space_name;
    END IF;
    IF found_id IS NULL THEN
        INSERT INTO pgrecall.embedding_spaces (space, dimensions) VALUES (space_name, space_dimensions)
        RETURNING id, dimensions INTO found_id, found_dimensions;
        PERFORM pgrecall.create_embedding_space_index(found_id, space_dimensions);
    END IF;
    IF found_dimensions <> space_dimensions THEN
        RAISE EXCEPTION 'embedding space % holds vectors of % dimensions, not %',
            space_name, found_dimensions, space_dimensions
            USING ERRCODE = 'data_exception';
    END IF;
    RETURN found_id;
END
$$;

-- Writers only: the search side reads.
REVOKE ALL ON FUNCTION pgrecall.create_embedding_space_index(integer, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION pgrecall.embedding_space_id(text, integer) FROM PUBLIC;

SELECT pgrecall.create_embedding_space_index(id, dimensions) FROM pgrecall.embedding_spaces ORDER BY id;

DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'pgrecall_reader') THEN
        GRANT SELECT ON pgrecall.embedding_spaces TO pgrecall_reader;
    END IF;
END
$$;

-- vacuum after: pgrecall.chunks
