-- Queries about pgrecall's jobs in Procrastinate's tables (pgrecall.worker.recovery).

-- pending_jobs --
-- Jobs not yet finished for these roots: waiting (todo) or taken by a worker (doing).
SELECT count(*) FILTER (WHERE status = 'todo')::bigint,
       count(*) FILTER (WHERE status = 'doing')::bigint
FROM procrastinate_jobs
WHERE queue_name = %(queue)s
  AND status IN ('todo', 'doing')
  AND args ->> 'root' = ANY(%(roots)s)

-- accounted_paths --
-- Files of a root that have a row: indexed, or recorded with the reason they were not.
SELECT path
FROM pgrecall.documents
WHERE source_root = %(root)s
  AND parent_id IS NULL
  AND (indexed_at IS NOT NULL OR error IS NOT NULL)
  AND path = ANY(%(paths)s)
