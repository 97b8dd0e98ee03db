-- Queries of the SessionEnd and PreCompact hooks (pgrecall.worker.kept_sessions). Values are always parameters.

-- live_worker --
-- Whether a Procrastinate worker (serve's, or `pgrecall worker`) beat its heart within the
-- stalled interval: a job enqueued now is run by it, without a process of the hook's own.
SELECT EXISTS (
    SELECT 1 FROM procrastinate_workers
    WHERE last_heartbeat > now() - make_interval(secs => %(stalled_seconds)s)
);
