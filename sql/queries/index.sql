-- Queries of the write path (pgrecall.worker.store). Values are always parameters.

-- document_state --
-- other_space: the file (or one of an export's conversations) has vectors of
-- another embedding space than %(space)s, so it must be embedded again.
SELECT d.id, d.kind, d.content_hash, d.size_bytes, d.mtime, d.error, d.error_stage, d.chunking,
       (d.chunk_count > 0 AND d.embedding_space IS DISTINCT FROM %(space)s)
       OR EXISTS (
           SELECT 1 FROM pgrecall.documents c
           WHERE c.parent_id = d.id AND c.chunk_count > 0 AND c.embedding_space IS DISTINCT FROM %(space)s
       ) AS other_space
FROM pgrecall.documents d
WHERE d.source_root = %(root)s AND d.path = %(path)s AND d.parent_id IS NULL

-- child_documents --
SELECT path, content_hash, error, chunking,
       chunk_count > 0 AND embedding_space IS DISTINCT FROM %(space)s AS other_space
FROM pgrecall.documents
WHERE parent_id = %(parent_id)s

-- upsert_document --
-- A file of a root (parent_id NULL).
INSERT INTO pgrecall.documents AS d
    (source_root, path, parent_id, kind, content_hash, size_bytes, mtime, title, metadata,
     chunk_count, chunking, embedding_space, indexed_at, error, error_stage, redactions, project, occurred_at,
     language)
VALUES
    (%(root)s, %(path)s, NULL, %(kind)s, %(content_hash)s, %(size_bytes)s, %(mtime)s,
     %(title)s, %(metadata)s, %(chunk_count)s, %(chunking)s, %(embedding_space)s, now(), NULL, NULL,
     %(redactions)s,
     -- The document's own project, else its root's (0020).
     coalesce(%(project)s, (SELECT r.project FROM pgrecall.roots r WHERE r.path = %(root)s)),
     coalesce(%(occurred_at)s, %(mtime)s, now()), %(language)s)
ON CONFLICT (source_root, path) WHERE parent_id IS NULL DO UPDATE SET
    kind = excluded.kind,
    content_hash = excluded.content_hash,
    size_bytes = excluded.size_bytes,
    mtime = excluded.mtime,
    title = excluded.title,
    metadata = excluded.metadata,
    chunk_count = excluded.chunk_count,
    chunking = excluded.chunking,
    embedding_space = excluded.embedding_space,
    indexed_at = excluded.indexed_at,
    error = NULL,
    error_stage = NULL,
    redactions = excluded.redactions,
    project = excluded.project,
    occurred_at = excluded.occurred_at,
    language = excluded.language
RETURNING id

-- upsert_child --
-- A conversation of an export: unique by its path within its parent.
INSERT INTO pgrecall.documents AS d
    (source_root, path, parent_id, kind, content_hash, size_bytes, mtime, title, metadata,
     chunk_count, chunking, embedding_space, indexed_at, error, error_stage, redactions, project, occurred_at,
     language)
VALUES
    (%(root)s, %(path)s, %(parent_id)s, %(kind)s, %(content_hash)s, %(size_bytes)s, %(mtime)s,
     %(title)s, %(metadata)s, %(chunk_count)s, %(chunking)s, %(embedding_space)s, now(), NULL, NULL,
     %(redactions)s,
     coalesce(%(project)s, (SELECT r.project FROM pgrecall.roots r WHERE r.path = %(root)s)),
     coalesce(%(occurred_at)s, %(mtime)s, now()), %(language)s)
ON CONFLICT (parent_id, path) WHERE parent_id IS NOT NULL DO UPDATE SET
    kind = excluded.kind,
    content_hash = excluded.content_hash,
    size_bytes = excluded.size_bytes,
    mtime = excluded.mtime,
    title = excluded.title,
    metadata = excluded.metadata,
    chunk_count = excluded.chunk_count,
    chunking = excluded.chunking,
    embedding_space = excluded.embedding_space,
    indexed_at = excluded.indexed_at,
    error = NULL,
    error_stage = NULL,
    redactions = excluded.redactions,
    project = excluded.project,
    occurred_at = excluded.occurred_at,
    language = excluded.language
RETURNING id

-- record_failure --
-- Chunks indexed from an earlier, good version stay searchable.
INSERT INTO pgrecall.documents AS d
    (source_root, path, kind, content_hash, size_bytes, mtime, title, chunking, error, error_stage)
VALUES
    (%(root)s, %(path)s, %(kind)s, %(content_hash)s, %(size_bytes)s, %(mtime)s, %(title)s,
     %(chunking)s, %(error)s, %(error_stage)s)
ON CONFLICT (source_root, path) WHERE parent_id IS NULL DO UPDATE SET
    kind = CASE WHEN d.chunk_count > 0 THEN d.kind ELSE excluded.kind END,
    content_hash = excluded.content_hash,
    size_bytes = excluded.size_bytes,
    mtime = excluded.mtime,
    chunking = excluded.chunking,
    error = excluded.error,
    error_stage = excluded.error_stage
RETURNING id

-- touch_document --
UPDATE pgrecall.documents SET size_bytes = %(size_bytes)s, mtime = %(mtime)s
WHERE id = %(id)s AND (size_bytes IS DISTINCT FROM %(size_bytes)s OR mtime IS DISTINCT FROM %(mtime)s)

-- term_counts --
-- Per language and term: chunks and documents containing it.
SELECT p.language, p.term, count(*)::integer, count(DISTINCT c.document_id)::integer
FROM pgrecall.postings p
JOIN pgrecall.chunks c ON c.id = p.chunk_id
WHERE c.document_id = ANY(%(document_ids)s)
GROUP BY p.language, p.term

-- chunk_totals --
-- Per language (a document's chunks all have its language).
SELECT language, count(*)::bigint, coalesce(sum(term_count), 0)::bigint, count(DISTINCT document_id)::bigint
FROM pgrecall.chunks
WHERE document_id = ANY(%(document_ids)s)
GROUP BY language

-- delete_chunks --
-- The document's chunks but those the new version keeps (its postings go with them).
DELETE FROM pgrecall.chunks WHERE document_id = %(document_id)s AND id <> ALL(%(kept)s::bigint[])

-- chunk_write_keys --
-- What decides whether a chunk's row can stay (its write key, pgrecall.worker.store.write_key,
-- and the space its vector is of), and the section it is labelled with.
SELECT id, ordinal, write_key, section_key, fresh_from, embedding_space_id
FROM pgrecall.chunks WHERE document_id = %(document_id)s ORDER BY ordinal

-- park_moved_chunks --
-- Kept chunks whose place changed, moved in two steps (negative first) so that
-- no two rows hold one ordinal in between (UNIQUE (document_id, ordinal)).
UPDATE pgrecall.chunks AS c SET ordinal = -1 - m.ordinal
FROM unnest(%(ids)s::bigint[], %(ordinals)s::integer[]) AS m(id, ordinal)
WHERE c.id = m.id

-- place_moved_chunks --
UPDATE pgrecall.chunks SET ordinal = -1 - ordinal WHERE document_id = %(document_id)s AND ordinal < 0

-- label_kept_chunks --
-- Kept rows that take the section they are cut from now (an unchanged chunk of a section
-- that changed around it, or a row written before 0021).
UPDATE pgrecall.chunks AS c SET section_key = l.section_key, fresh_from = l.fresh_from
FROM unnest(%(ids)s::bigint[], %(section_keys)s::text[], %(fresh_froms)s::integer[]) AS l(id, section_key, fresh_from)
WHERE c.id = l.id

-- refresh_document_lengths --
-- The kept chunks' postings carry the document's new length step (0022).
UPDATE pgrecall.postings AS p SET document_length = pgrecall.document_length_step(d.term_count)
FROM pgrecall.documents d
WHERE d.id = %(document_id)s AND p.chunk_id = ANY(%(kept)s::bigint[])
  AND p.document_length <> pgrecall.document_length_step(d.term_count)

-- commit_without_flush --
-- A document write commits without waiting for its WAL to reach the disk (the WAL writer flushes
-- it within a few hundred milliseconds): what is written is derived from a file that stays, and
-- the queue's job completes only after it, in a transaction that does wait, and whose flush takes
-- every earlier record with it. A crash can lose only writes whose jobs did not complete: those run
-- again (stalled jobs), and the folders are reconciled at every start. PostgreSQL keeps such a
-- commit atomic and in order; only the last ones may be missing after a crash.
SET LOCAL synchronous_commit = off

-- embedding_space_id --
-- The space's id, the space (and its HNSW index) added first when it is new (0023). The first
-- statement of a write's transaction that takes a lock: see pgrecall.embedding_space_id.
SELECT pgrecall.embedding_space_id(%(space)s::text, %(dimensions)s::integer)

-- create_staging --
CREATE TEMPORARY TABLE IF NOT EXISTS staging_chunks (
    ordinal integer,
    heading text,
    text text,
    token_count integer,
    embedding vector,                    -- of any dimension: one space's per write (0023)
    keyword_text text,
    identifiers text[],
    section_key text,
    fresh_from integer,
    write_key text
) ON COMMIT DELETE ROWS

-- copy_staging --
COPY staging_chunks (ordinal, heading, text, token_count, embedding, keyword_text, identifiers, section_key, fresh_from, write_key)
FROM STDIN (FORMAT BINARY)

-- insert_chunks --
INSERT INTO pgrecall.chunks
    (document_id, ordinal, heading, text, token_count, embedding, embedding_space_id, fts, term_count,
     section_key, fresh_from, write_key, language)
SELECT %(document_id)s, s.ordinal, s.heading, s.text, s.token_count, s.embedding, %(embedding_space_id)s, v.fts,
       (SELECT coalesce(sum(coalesce(array_length(l.positions, 1), 1)), 0) FROM unnest(v.fts) l),
       s.section_key, s.fresh_from, s.write_key, %(config)s
FROM staging_chunks s
CROSS JOIN LATERAL (
    -- keyword_text holds each word of a document once: a heading path in the
    -- first chunk of its section only, nothing of the overlap with the chunk
    -- before (the model still sees both). Identifiers are kept whole as extra lexemes.
    SELECT to_tsvector(%(config)s::regconfig, s.keyword_text) || array_to_tsvector(s.identifiers) AS fts
) v

-- document_term_count --
-- True if the length's step moved from the one the kept postings carry (%(old)s's).
UPDATE pgrecall.documents
SET term_count = (SELECT coalesce(sum(term_count), 0) FROM pgrecall.chunks WHERE document_id = %(document_id)s)
WHERE id = %(document_id)s
RETURNING pgrecall.document_length_step(term_count) <> pgrecall.document_length_step(%(old)s)

-- insert_postings --
-- Each posting carries its document and the chunk's and document's lengths (0014), the
-- document's in steps (0022); document_term_count writes the exact one to its row. Its
-- language is its chunk's, and the average length its impact assumes that language's (0024).
INSERT INTO pgrecall.postings (term, chunk_id, tf, impact, document_id, chunk_length, document_length, language)
SELECT l.lexeme, c.id, l.tf,
       l.tf * (%(k1)s + 1) / (l.tf + %(k1)s * (1 - %(b)s + %(b)s * c.term_count / a.average_length)),
       c.document_id, c.term_count,
       pgrecall.document_length_step(
           (SELECT coalesce(sum(term_count), 0) FROM pgrecall.chunks WHERE document_id = %(document_id)s)),
       c.language
FROM pgrecall.chunks c
CROSS JOIN LATERAL (
    SELECT lexeme, coalesce(array_length(positions, 1), 1) AS tf FROM unnest(c.fts)
) l
CROSS JOIN (
    -- The language's totals: its base row plus the deltas not folded into it yet (0013).
    SELECT coalesce(sum(term_total)::bigint::float8 / nullif(sum(chunk_count)::bigint, 0),
                    %(default_average_length)s) AS average_length
    FROM (
        SELECT chunk_count, term_total FROM pgrecall.corpus_stats WHERE language = %(config)s
        UNION ALL
        SELECT chunk_count, term_total FROM pgrecall.corpus_stat_deltas WHERE language = %(config)s
    ) t
) a
WHERE c.document_id = %(document_id)s AND c.id <> ALL(%(kept)s::bigint[])

-- record_document_statistics --
-- A document write's change to BM25's statistics, recorded in one statement as delta rows
-- (0013): the document's statistics now, counted as term_counts and chunk_totals count them,
-- minus the ones before the write (the parameters, which those two queries read before it).
-- The document's terms never travel to the client and back: that took four statements and
-- about a tenth of a write at 1M chunks (issue 24). Returns the delta rows recorded.
WITH terms_now AS (
    SELECT p.language, p.term, count(*)::integer AS chunks, count(DISTINCT c.document_id)::integer AS documents
    FROM pgrecall.postings p
    JOIN pgrecall.chunks c ON c.id = p.chunk_id
    WHERE c.document_id = %(document_id)s
    GROUP BY p.language, p.term
),
terms_before AS (
    SELECT * FROM unnest(%(languages)s::text[], %(terms)s::text[], %(chunks)s::integer[], %(documents)s::integer[])
        AS b(language, term, chunks, documents)
),
term_changes AS (
    SELECT coalesce(n.language, b.language) AS language, coalesce(n.term, b.term) AS term,
           coalesce(n.chunks, 0) - coalesce(b.chunks, 0) AS df,
           coalesce(n.documents, 0) - coalesce(b.documents, 0) AS document_df
    FROM terms_now n
    FULL JOIN terms_before b ON b.language = n.language AND b.term = n.term
),
recorded_terms AS (
    INSERT INTO pgrecall.term_stat_deltas (language, term, df, document_df)
    SELECT language, term, df, document_df FROM term_changes
    WHERE df <> 0 OR document_df <> 0
    RETURNING 1
),
totals_now AS (
    SELECT language, count(*)::bigint AS chunks, coalesce(sum(term_count), 0)::bigint AS lexemes,
           count(DISTINCT document_id)::bigint AS documents
    FROM pgrecall.chunks
    WHERE document_id = %(document_id)s
    GROUP BY language
),
totals_before AS (
    SELECT * FROM unnest(%(total_languages)s::text[], %(total_chunks)s::bigint[], %(total_lexemes)s::bigint[],
                         %(total_documents)s::bigint[])
        AS b(language, chunks, lexemes, documents)
),
total_changes AS (
    SELECT coalesce(n.language, b.language) AS language,
           coalesce(n.chunks, 0) - coalesce(b.chunks, 0) AS chunks,
           coalesce(n.lexemes, 0) - coalesce(b.lexemes, 0) AS lexemes,
           coalesce(n.documents, 0) - coalesce(b.documents, 0) AS documents
    FROM totals_now n
    FULL JOIN totals_before b ON b.language = n.language
),
recorded_totals AS (
    INSERT INTO pgrecall.corpus_stat_deltas (language, chunk_count, term_total, document_count)
    SELECT language, chunks, lexemes, documents FROM total_changes
    WHERE chunks <> 0 OR lexemes <> 0 OR documents <> 0
    RETURNING 1
)
SELECT (SELECT count(*) FROM recorded_terms) + (SELECT count(*) FROM recorded_totals)

-- record_term_deltas --
-- A transaction's changes to term statistics: new rows only, no row shared with
-- another writer, so concurrent writers never wait on each other here (0013).
INSERT INTO pgrecall.term_stat_deltas (language, term, df, document_df)
SELECT d.language, d.term, d.delta, d.document_delta
FROM unnest(%(languages)s::text[], %(terms)s::text[], %(deltas)s::integer[], %(document_deltas)s::integer[])
    AS d(language, term, delta, document_delta)

-- record_corpus_deltas --
-- One row per language whose totals changed.
INSERT INTO pgrecall.corpus_stat_deltas (language, chunk_count, term_total, document_count)
SELECT * FROM unnest(%(languages)s::text[], %(chunks)s::bigint[], %(terms)s::bigint[], %(documents)s::bigint[])

-- fold_lock --
-- One folder at a time; the others skip (pgrecall.worker.statistics). Held to commit.
SELECT pg_try_advisory_xact_lock(%(key)s)

-- fold_term_stats --
-- Moves the committed term deltas into term_stats, in one statement: rows of
-- transactions still open are invisible to the DELETE and stay for the next fold.
-- A term whose chunk count reaches zero is pruned.
WITH moved AS (
    DELETE FROM pgrecall.term_stat_deltas RETURNING language, term, df, document_df
),
summed AS (
    SELECT language, term, sum(df)::integer AS df, sum(document_df)::integer AS document_df
    FROM moved GROUP BY language, term
    HAVING sum(df) <> 0 OR sum(document_df) <> 0
),
merged AS (
    SELECT s.language, s.term, s.df, s.document_df, coalesce(t.df, 0) + s.df AS total
    FROM summed s LEFT JOIN pgrecall.term_stats t ON t.language = s.language AND t.term = s.term
),
pruned AS (
    DELETE FROM pgrecall.term_stats t USING merged m
    WHERE t.language = m.language AND t.term = m.term AND m.total <= 0
    RETURNING t.term
),
upserted AS (
    INSERT INTO pgrecall.term_stats AS t (language, term, df, document_df)
    SELECT language, term, df, document_df FROM merged WHERE total > 0
    ORDER BY language, term
    ON CONFLICT (language, term) DO UPDATE SET df = t.df + excluded.df, document_df = t.document_df + excluded.document_df
    RETURNING 1
)
SELECT (SELECT count(*) FROM moved), (SELECT count(*) FROM upserted), (SELECT count(*) FROM pruned)

-- fold_corpus_stats --
-- Per language; a language's row stays (at zero) when its last document goes.
WITH moved AS (
    DELETE FROM pgrecall.corpus_stat_deltas RETURNING language, chunk_count, term_total, document_count
),
summed AS (
    SELECT language, count(*) AS deltas, sum(chunk_count)::bigint AS chunks,
           sum(term_total)::bigint AS terms, sum(document_count)::bigint AS documents
    FROM moved GROUP BY language
),
upserted AS (
    INSERT INTO pgrecall.corpus_stats AS c (language, chunk_count, term_total, document_count)
    SELECT language, chunks, terms, documents FROM summed
    ORDER BY language
    ON CONFLICT (language) DO UPDATE
    SET chunk_count = c.chunk_count + excluded.chunk_count,
        term_total = c.term_total + excluded.term_total,
        document_count = c.document_count + excluded.document_count
    RETURNING 1
)
SELECT coalesce(sum(deltas), 0)::bigint FROM summed

-- pending_deltas --
-- Delta rows not folded yet (visible to this transaction).
SELECT (SELECT count(*) FROM pgrecall.term_stat_deltas), (SELECT count(*) FROM pgrecall.corpus_stat_deltas)

-- documents_to_remove --
-- The file at path or, for a folder, every file below it; with their children
-- (an export's conversations, found by parent, never by a path prefix).
WITH files AS (
    SELECT id FROM pgrecall.documents
    WHERE source_root = %(root)s AND parent_id IS NULL
      AND (path = %(path)s OR starts_with(path, %(path)s || '/'))
)
SELECT id FROM files
UNION ALL
SELECT c.id FROM pgrecall.documents c WHERE c.parent_id IN (SELECT id FROM files)

-- children_at --
-- Conversations of one export, by path.
SELECT id FROM pgrecall.documents WHERE parent_id = %(parent_id)s AND path = ANY(%(paths)s)

-- delete_documents --
DELETE FROM pgrecall.documents WHERE id = ANY(%(document_ids)s)

-- file_states --
-- other_space as in document_state.
SELECT d.path, d.size_bytes, d.mtime, d.content_hash, d.chunking,
       (d.chunk_count > 0 AND d.embedding_space IS DISTINCT FROM %(space)s)
       OR EXISTS (
           SELECT 1 FROM pgrecall.documents c
           WHERE c.parent_id = d.id AND c.chunk_count > 0 AND c.embedding_space IS DISTINCT FROM %(space)s
       ) AS other_space,
       d.error IS NOT NULL AS failed
FROM pgrecall.documents d
WHERE d.source_root = %(root)s AND d.parent_id IS NULL
  AND NOT d.metadata ? 'archived_at'  -- gone from the source and kept (worker/archive.py): not the folder's

-- held_paths --
-- Of these paths, those the root's files have a row at (indexed or recorded with a reason),
-- as file_states: not the copies an archive root keeps of files deleted at the source.
SELECT path
FROM pgrecall.documents
WHERE source_root = %(root)s AND parent_id IS NULL AND path = ANY(%(paths)s)
  AND NOT metadata ? 'archived_at'

-- indexed_roots --
-- The roots with files indexed (pgrecall reembed looks at each: store.file_states).
SELECT DISTINCT source_root FROM pgrecall.documents WHERE parent_id IS NULL ORDER BY source_root

-- documents_at --
-- The file at exactly this path, with an export's conversations.
WITH files AS (
    SELECT id FROM pgrecall.documents WHERE source_root = %(root)s AND parent_id IS NULL AND path = %(path)s
)
SELECT id FROM files
UNION ALL
SELECT c.id FROM pgrecall.documents c WHERE c.parent_id IN (SELECT id FROM files)

-- rename_documents --
-- A moved file or folder keeps its chunks and embeddings: only paths change.
-- A file already at the new path (moved there by an earlier job) is left as it is.
-- Returns each moved file's id with its old and new path, for rename_children.
UPDATE pgrecall.documents AS d
SET path = %(destination)s || substr(d.path, length(%(source)s) + 1)
WHERE d.source_root = %(root)s AND d.parent_id IS NULL
  AND (d.path = %(source)s OR starts_with(d.path, %(source)s || '/'))
  AND NOT EXISTS (
      SELECT 1 FROM pgrecall.documents o
      WHERE o.source_root = d.source_root AND o.parent_id IS NULL
        AND o.path = %(destination)s || substr(d.path, length(%(source)s) + 1)
  )
RETURNING d.id, %(source)s || substr(d.path, length(%(destination)s) + 1), d.path

-- rename_children --
-- A moved export's conversations: "old.json#uuid" becomes "new.json#uuid".
UPDATE pgrecall.documents AS c
SET path = m.new_path || substr(c.path, length(m.old_path) + 1)
FROM unnest(%(ids)s::bigint[], %(old_paths)s::text[], %(new_paths)s::text[]) AS m(id, old_path, new_path)
WHERE c.parent_id = m.id AND starts_with(c.path, m.old_path)

-- lock_roots --
-- One registration of a root at a time, until commit: ON CONFLICT (name) then always sees the
-- other's row, instead of failing on the path's unique key while it is being inserted.
SELECT pg_advisory_xact_lock(%(key)s)

-- upsert_root --
INSERT INTO pgrecall.roots (name, path, archive_folder) VALUES (%(name)s, %(path)s, %(archive_folder)s)
ON CONFLICT (name) DO UPDATE SET path = excluded.path, archive_folder = excluded.archive_folder

-- set_root_project --
UPDATE pgrecall.roots SET project = %(project)s WHERE name = %(name)s

-- root_paths --
-- The folders of the roots followed (registered by serve, watch or index without a path).
SELECT path FROM pgrecall.roots ORDER BY path

-- root_project --
SELECT project FROM pgrecall.roots WHERE path = %(path)s

-- root_project_to_documents --
-- A root's project changed in the config: its documents that had the old one (those that name
-- none of their own) take the new one.
UPDATE pgrecall.documents SET project = %(project)s
WHERE source_root = %(path)s AND project IS NOT DISTINCT FROM %(old)s

-- lock_documents --
-- Of these documents, those still there, locked until commit before their statistics
-- are read: a rewrite or removal of one of them by another transaction finishes first
-- (and is seen), or waits for this one. Files before conversations, each in id order,
-- as every remover locks them, so two never deadlock.
SELECT id FROM pgrecall.documents
WHERE id = ANY(%(document_ids)s)
ORDER BY parent_id IS NOT NULL, id
FOR UPDATE

-- lock_children --
-- Conversations of the locked exports not among those already locked: added by a
-- transaction that committed while this one waited for the lock (a new conversation
-- locks its export against removal, so no other can come after). They go with their
-- export (ON DELETE CASCADE), so their statistics must go too.
SELECT id FROM pgrecall.documents
WHERE parent_id = ANY(%(parent_ids)s) AND id <> ALL(%(locked)s)
ORDER BY id
FOR UPDATE

-- root_archive_folder --
-- Where an archive root keeps its copies (0019); no row for a root that is not one.
SELECT archive_folder FROM pgrecall.roots WHERE path = %(root)s AND archive_folder IS NOT NULL

-- files_at_or_under --
-- The files (not conversations) at path or, for a folder, below it, archived ones too.
SELECT path FROM pgrecall.documents
WHERE source_root = %(root)s AND parent_id IS NULL
  AND (path = %(path)s OR starts_with(path, %(path)s || '/'))

-- archive_file --
-- The file at path and an export's conversations, marked archived, with where the copy is.
WITH files AS (
    SELECT id FROM pgrecall.documents WHERE source_root = %(root)s AND parent_id IS NULL AND path = %(path)s
)
UPDATE pgrecall.documents d
SET metadata = d.metadata || jsonb_build_object(
    'archived_at', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
    'archive_copy', %(copy)s::text)
WHERE (d.id IN (SELECT id FROM files) OR d.parent_id IN (SELECT id FROM files))
  AND NOT d.metadata ? 'archived_at'

-- unarchive_file --
-- The file is at its source again.
WITH files AS (
    SELECT id FROM pgrecall.documents WHERE source_root = %(root)s AND parent_id IS NULL AND path = %(path)s
)
UPDATE pgrecall.documents d
SET metadata = d.metadata - 'archived_at' - 'archive_copy'
WHERE (d.id IN (SELECT id FROM files) OR d.parent_id IN (SELECT id FROM files))
  AND d.metadata ? 'archived_at'

-- archived_files --
SELECT path, metadata ->> 'archive_copy' AS copy FROM pgrecall.documents
WHERE source_root = %(root)s AND parent_id IS NULL AND metadata ? 'archived_at'

-- stored_chunks --
-- The vectors of these documents' chunks in %(space)s, for the chunks of a new
-- version whose embedding text is unchanged (pgrecall.worker.store.stored_chunks).
-- A file's documents have parent_id NULL; an export's conversations, their export's id.
-- With each chunk the section it was cut from and how, when the document was
-- chunked as %(chunking)s: an unchanged section then takes its chunks as they are.
SELECT d.path, c.ordinal, c.heading, c.text, c.token_count, c.embedding,
       CASE WHEN d.chunking = %(chunking)s THEN c.section_key END AS section_key, c.fresh_from
FROM pgrecall.documents d
JOIN pgrecall.chunks c ON c.document_id = d.id
WHERE d.source_root = %(root)s AND d.path = ANY(%(paths)s)
  AND d.parent_id IS NOT DISTINCT FROM %(parent_id)s::bigint
  AND d.embedding_space = %(space)s
ORDER BY d.path, c.ordinal
