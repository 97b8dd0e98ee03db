-- Queries about pgrecall's jobs in Procrastinate's tables (pgrecall.worker.recovery).

-- pending_jobs --
-- Jobs not yet finished for these roots: waiting (todo) or taken by a worker (doing).
SELECT count(*) FILTER (WHERE status = 'todo')::bigint,
       count(*) FILTER (WHERE status = 'doing')::bigint
FROM procrastinate_jobs
WHERE queue_name = %(queue)s
  AND status IN ('todo', 'doing')
  AND args ->> 'root' = ANY(%(roots)s)

-- stalled_job_count --
-- Jobs held by a worker whose heartbeat stopped (killed, machine lost) or that left none.
SELECT count(*)::bigint
FROM procrastinate_jobs j
LEFT JOIN procrastinate_workers w ON w.id = j.worker_id
WHERE j.queue_name = %(queue)s
  AND j.status = 'doing'
  AND (w.id IS NULL OR w.last_heartbeat < now() - make_interval(secs => %(stalled_seconds)s))

-- accounted_paths --
-- Files of a root that have a row: indexed, or recorded with the reason they were not.
SELECT path
FROM pgrecall.documents
WHERE source_root = %(root)s
  AND parent_id IS NULL
  AND (indexed_at IS NOT NULL OR error IS NOT NULL)
  AND path = ANY(%(paths)s)
