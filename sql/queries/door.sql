-- Queries of remember's door (pgrecall.worker.memory.writer, pgrecall.worker.memory.door). Values are parameters.

-- nearest_memories --
-- The memories of the memory root nearest to a new text's vector: each memory once, by its best
-- chunk, with that chunk's cosine similarity, most similar first. Exact, not through the HNSW
-- index: a filtered approximate scan of an index of many notes can miss the one memory that
-- matters, and the memory root's chunks are few (thousands after years), read by (source_root, path).
-- Chunks of another embedding space are not comparable and are never read.
SELECT d.metadata ->> 'id' AS id, max(1 - (c.embedding <=> %(embedding)s::vector))::float8 AS similarity
FROM pgrecall.documents d
JOIN pgrecall.chunks c ON c.document_id = d.id
WHERE d.source_root = %(root)s
  AND d.parent_id IS NULL
  AND d.metadata ->> 'id' IS NOT NULL
  AND c.embedding_space_id = (SELECT s.id FROM pgrecall.embedding_spaces s WHERE s.space = %(space)s)
GROUP BY d.metadata ->> 'id'
ORDER BY similarity DESC, id
LIMIT %(limit)s
