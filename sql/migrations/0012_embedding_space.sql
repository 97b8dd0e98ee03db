-- The embedding space of a document's vectors: model name, checksum of its
-- weights, dimensions, backend and quantization (pgrecall.embedding.Embedder.space).
-- Vectors of two spaces are never compared: a search whose query embedder is of
-- another space than the index's refuses, and `pgrecall index`, `serve`'s
-- reconciliation and `pgrecall reembed` embed again what is of another space.
-- Existing rows have none (their space was not recorded): they count as another
-- space, so the next reconciliation or `pgrecall reembed` redoes them.
ALTER TABLE pgrecall.documents ADD COLUMN embedding_space text;

COMMENT ON COLUMN pgrecall.documents.embedding_space IS
'The embedding space of this document''s chunk vectors (model, weights checksum, dimensions, '
'backend, quantization), as pgrecall.embedding.Embedder.space writes it. Meaningful where '
'chunk_count > 0; NULL for rows indexed before it was recorded.';

-- The spaces present, read by every search (a loose index scan over this index
-- takes a few page reads however many documents there are).
CREATE INDEX documents_embedding_space ON pgrecall.documents (embedding_space) WHERE chunk_count > 0;
