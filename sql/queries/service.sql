-- Queries of the long-running service (worker/service.py, worker/watch.py); `pgrecall status` reads status.sql.

-- set_watch_mode --
UPDATE pgrecall.roots
SET watch_mode = %(mode)s, watch_mode_since = now(), watcher_seen_at = now()
WHERE path = %(path)s

-- touch_watcher --
UPDATE pgrecall.roots
SET watcher_seen_at = now(),
    last_event_at = GREATEST(last_event_at, %(last_event_at)s::timestamptz)
WHERE path = %(path)s

-- service_status --
SELECT
    (SELECT count(*) FROM procrastinate_jobs WHERE queue_name = %(queue)s AND status = 'todo')::bigint AS todo,
    (SELECT count(*) FROM procrastinate_jobs WHERE queue_name = %(queue)s AND status = 'doing')::bigint AS doing,
    (SELECT max(indexed_at) FROM pgrecall.documents) AS last_indexed_at

-- hold_watch_lock --
-- Held by the watcher's own connection while it runs (pgrecall.worker.watch_lease); shared,
-- so that two watchers of one root never wait on each other.
SELECT pg_try_advisory_lock_shared(hashtextextended(%(prefix)s || %(path)s, 0))

-- release_watch_locks --
SELECT pg_advisory_unlock_all()
