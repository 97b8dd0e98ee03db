-- Queries of the memory service (pgrecall.worker.memory_service). Values are always parameters.

-- memory_by_digest --
-- An indexed memory with exactly this text (its front matter's content_sha256).
SELECT metadata ->> 'id'
FROM pgrecall.documents
WHERE source_root = %(root)s
  AND parent_id IS NULL
  AND error IS NULL
  AND metadata ->> 'content_sha256' = %(digest)s
ORDER BY id
LIMIT 1

-- lock --
-- Held while one memory is written and indexed, across every process on this database.
SELECT pg_advisory_lock(hashtextextended(%(key)s, 0))

-- unlock --
SELECT pg_advisory_unlock(hashtextextended(%(key)s, 0))
