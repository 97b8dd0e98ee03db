-- Queries of the memory service (pgrecall.worker.memory.writer). Values are always parameters.

-- memory_by_digest --
-- The ids of indexed memories whose front matter's content_sha256 is this text's: consulted only
-- for notes that can no longer be read (the folder's notes are the source of truth).
SELECT metadata ->> 'id'
FROM pgrecall.documents
WHERE source_root = %(root)s
  AND parent_id IS NULL
  AND metadata ->> 'content_sha256' = %(digest)s
ORDER BY id

-- lock --
-- Held while one memory is written and indexed, across every process on this database.
SELECT pg_advisory_lock(hashtextextended(%(key)s, 0))

-- unlock --
SELECT pg_advisory_unlock(hashtextextended(%(key)s, 0))

-- lock_transaction --
-- The same lock as `lock`, held until the end of the transaction: a worker recording a hand edit
-- of one memory waits for a change the memory service is making to it, and the other way round.
SELECT pg_advisory_xact_lock(hashtextextended(%(key)s, 0))
