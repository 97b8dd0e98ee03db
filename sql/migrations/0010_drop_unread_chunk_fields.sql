-- Nothing maintained that nothing reads. The keyword arm reads the postings
-- (0001) and document statistics (0004), never `chunks.fts` through a GIN
-- index: the index only cost every write its update. `fts` itself stays, the
-- write path derives the postings from it. `chunks.metadata` was never
-- written or read: a document's metadata lives on pgrecall.documents.
DROP INDEX pgrecall.chunks_fts;
ALTER TABLE pgrecall.chunks DROP COLUMN metadata;
