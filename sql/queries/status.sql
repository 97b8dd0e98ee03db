-- What `pgrecall status`, `pgrecall failures` and the search side's /health read (pgrecall.status).
-- The queue's name and the document kinds come as parameters from pgrecall.status and pgrecall.kinds.

-- index_status --
-- not_documents: kinds.NOT_DOCUMENTS; skipped_stage: kinds.SKIPPED_STAGE (what tells skipped from failed,
-- for the index run's summary as for this).
SELECT
    (SELECT count(*) FROM pgrecall.documents WHERE kind <> ALL(%(not_documents)s::text[])) AS documents,
    (SELECT count(*) FROM pgrecall.chunks) AS chunks,
    (SELECT count(*) FROM pgrecall.documents
     WHERE error IS NOT NULL AND error_stage IS DISTINCT FROM %(skipped_stage)s) AS failed,
    (SELECT count(*) FROM pgrecall.documents WHERE error IS NOT NULL AND error_stage = %(skipped_stage)s) AS skipped,
    (SELECT max(indexed_at) FROM pgrecall.documents) AS last_indexed_at

-- queue_status --
-- Jobs of one queue by status, and when the oldest waiting one was deferred (by the database's clock).
SELECT count(*) FILTER (WHERE j.status = 'todo')::bigint AS todo,
       count(*) FILTER (WHERE j.status = 'doing')::bigint AS doing,
       count(*) FILTER (WHERE j.status = 'failed')::bigint AS failed,
       min(e.at) AS oldest_waiting_since,
       round(extract(epoch FROM now() - min(e.at))::numeric, 1)::float8 AS oldest_waiting_age_s
FROM procrastinate_jobs j
LEFT JOIN LATERAL (
    SELECT min(ev.at) AS at FROM procrastinate_events ev WHERE ev.job_id = j.id AND ev.type = 'deferred'
) e ON j.status = 'todo'
WHERE j.queue_name = %(queue)s

-- stalled_job_count --
-- Jobs held by a worker whose heartbeat stopped (killed, machine lost) or that left none.
SELECT count(*)::bigint
FROM procrastinate_jobs j
LEFT JOIN procrastinate_workers w ON w.id = j.worker_id
WHERE j.queue_name = %(queue)s
  AND j.status = 'doing'
  AND (w.id IS NULL OR w.last_heartbeat < now() - make_interval(secs => %(stalled_seconds)s))

-- roots --
-- Every root that is watched or has documents, with its files indexed without
-- error, when it was last indexed, and how the watcher last said it watches it.
-- watched: a running watcher holds the root's lock now (pgrecall.worker.watch_lease);
-- followed: a registered root, not a folder only indexed.
WITH known AS (
    SELECT r.name, r.path FROM pgrecall.roots r
    UNION
    SELECT NULL, d.source_root FROM pgrecall.documents d
    WHERE NOT EXISTS (SELECT 1 FROM pgrecall.roots r WHERE r.path = d.source_root)
    GROUP BY d.source_root
), held AS MATERIALIZED (  -- advisory locks on one bigint key, held in this database, read once
    SELECT (l.classid::bigint << 32) | l.objid::bigint AS key
    FROM pg_locks l
    WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
      AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
)
SELECT k.name, k.path, p.indexed, p.archived, r.archive_folder, p.last_indexed_at,
       r.watch_mode, r.watch_mode_since, r.watcher_seen_at, r.last_event_at,
       r.name IS NOT NULL AS followed,
       EXISTS (
           SELECT 1 FROM held h WHERE h.key = hashtextextended(%(watch_lock_prefix)s || k.path, 0)
       ) AS watched
FROM known k
CROSS JOIN LATERAL (
    SELECT count(*) FILTER (WHERE d.error IS NULL)::bigint AS indexed,
           count(*) FILTER (WHERE d.metadata ? 'archived_at')::bigint AS archived,  -- kept, gone from the source
           max(d.indexed_at) AS last_indexed_at
    FROM pgrecall.documents d
    WHERE d.source_root = k.path AND d.parent_id IS NULL
) p
LEFT JOIN pgrecall.roots r ON r.path = k.path
ORDER BY k.path

-- memory_count --
-- Memories in the index: notes of the memory folder indexed without error, with an id in their
-- front matter (other files a user put in the folder are indexed too, but are not memories).
SELECT count(*)::bigint
FROM pgrecall.documents
WHERE source_root = %(root)s AND parent_id IS NULL AND error IS NULL AND metadata ? 'id'

-- failures --
SELECT source_root, path, kind, error_stage, error
FROM pgrecall.documents
WHERE error IS NOT NULL
ORDER BY source_root, path
LIMIT %(limit)s

-- health --
-- Runs as pgrecall_reader, which may not read the queue's tables: the depth
-- comes through pgrecall.queue_depth(text) (migration 0009).
SELECT (SELECT max(indexed_at) FROM pgrecall.documents) AS last_indexed_at,
       pgrecall.queue_depth(%(queue)s) AS queue_depth,
       (SELECT count(*) FROM pgrecall.documents WHERE kind <> ALL(%(not_documents)s::text[])) AS documents

-- embedding_spaces --
-- Documents and chunks per embedding space (0012); NULL: indexed before spaces were recorded.
SELECT embedding_space AS space, count(*)::bigint AS documents, sum(chunk_count)::bigint AS chunks
FROM pgrecall.documents
WHERE chunk_count > 0
GROUP BY embedding_space
ORDER BY count(*) DESC, embedding_space

-- document_languages --
-- Documents per language (0024): the text search configuration each was analysed with.
SELECT coalesce(language, 'simple') AS language, count(*)::bigint AS documents
FROM pgrecall.documents
WHERE chunk_count > 0
GROUP BY 1
ORDER BY count(*) DESC, 1

-- redaction_totals --
-- Secrets replaced by a marker before indexing (0016), and the documents that held them.
SELECT coalesce(sum(r.count), 0)::bigint AS secrets, count(DISTINCT d.id)::bigint AS documents
FROM pgrecall.documents d
CROSS JOIN LATERAL (SELECT value::bigint AS count FROM jsonb_each_text(d.redactions)) r

-- redactions_by_kind --
SELECT r.key AS kind, sum(r.value::bigint)::bigint AS secrets
FROM pgrecall.documents d
CROSS JOIN LATERAL jsonb_each_text(d.redactions) r
GROUP BY r.key
ORDER BY r.key

-- models --
-- Each embedding space of the index (0023), with its documents and chunks and its own HNSW
-- index (chunks_embedding_space_<id>; NULL if it is missing), oldest first; then the documents
-- whose space was never recorded (before 0012), which no index covers.
SELECT s.id, s.space, s.dimensions, s.created_at,
       coalesce(d.documents, 0)::bigint AS documents, coalesce(d.chunks, 0)::bigint AS chunks,
       i.relname::text AS hnsw_index, pg_relation_size(i.oid)::bigint AS hnsw_bytes
FROM pgrecall.embedding_spaces s
LEFT JOIN (
    SELECT embedding_space, count(*) AS documents, sum(chunk_count) AS chunks
    FROM pgrecall.documents WHERE chunk_count > 0 GROUP BY embedding_space
) d ON d.embedding_space = s.space
LEFT JOIN pg_class i ON i.relname = 'chunks_embedding_space_' || s.id AND i.relnamespace = 'pgrecall'::regnamespace
UNION ALL
SELECT NULL, NULL, NULL, NULL, count(*)::bigint, sum(chunk_count)::bigint, NULL, NULL
FROM pgrecall.documents
WHERE chunk_count > 0 AND embedding_space IS NULL
HAVING count(*) > 0
ORDER BY 1 NULLS LAST
