-- Queries of the read-only search side (pgrecall.api.read_queries, pgrecall.api.reader): reads only.
-- {placeholders} are filled once, at load, with the fixed snippets below; values are parameters.

-- filter_joins --
JOIN pgrecall.chunks fc ON fc.id = {chunk_id}
JOIN pgrecall.documents d ON d.id = fc.document_id

-- document_filter --
(%(source_root)s::text IS NULL OR d.source_root = %(source_root)s)
AND (%(root)s::text IS NULL OR d.source_root = (SELECT r.path FROM pgrecall.roots r WHERE r.name = %(root)s))
AND (%(path_prefix)s::text IS NULL
     OR starts_with(CASE WHEN starts_with(%(path_prefix)s, '/') THEN d.source_root || '/' || d.path ELSE d.path END,
                    %(path_prefix)s))
AND (%(kind)s::text IS NULL OR d.kind = %(kind)s)
AND (%(metadata)s::jsonb IS NULL OR d.metadata @> %(metadata)s
     -- Key by key, a value also matches a front-matter list holding it (`tags: [incident]`
     -- for tags=incident): containment alone wants the same shape on both sides.
     OR NOT EXISTS (SELECT FROM jsonb_each(%(metadata)s) wanted
                    WHERE NOT d.metadata @> jsonb_build_object(wanted.key, wanted.value)
                      AND NOT d.metadata @> jsonb_build_object(wanted.key, jsonb_build_array(wanted.value))))
AND (%(modified_since)s::timestamptz IS NULL OR d.mtime >= %(modified_since)s)
AND (%(project)s::text IS NULL OR d.project = %(project)s)
AND (%(since)s::timestamptz IS NULL OR d.occurred_at >= %(since)s)
AND (%(before)s::timestamptz IS NULL OR d.occurred_at < %(before)s)

-- hnsw_settings --
-- The vector arm's HNSW settings for this transaction, in one round trip: ef_search is
-- PGRECALL_EF_SEARCH where set, else chosen for the space searched (pgrecall.api.vector_effort).
-- pgvector 0.8's iterative scan keeps reading the graph until enough rows pass the filter.
-- local: for this transaction; false: for the connection's session (statements outside a transaction).
SELECT set_config('hnsw.ef_search', %(ef_search)s, %(local)s),
       set_config('hnsw.iterative_scan', 'relaxed_order', %(local)s)

-- vector_arm --
-- Each nearest chunk of one embedding space with its cosine similarity (1 - cosine distance),
-- nearest first. {dimensions} and {space_id} are the space's (pgrecall.embedding_spaces), written
-- into the text as constants: the ORDER BY expression and the predicate are those of the space's
-- partial HNSW index (0023), so the planner can prove that index usable, which it cannot for a
-- parameter of a generic plan. Chunks of other spaces are never read.
-- pgvector 0.8's iterative scan keeps reading the HNSW graph until enough rows
-- pass the filter; relaxed order is re-sorted by the outer query.
WITH nearest AS MATERIALIZED (
    SELECT c.id, c.embedding::vector({dimensions}) <=> %(embedding)s AS distance
    FROM pgrecall.chunks c
    {filter_joins}
    WHERE c.embedding_space_id = {space_id} AND {document_filter}
    ORDER BY c.embedding::vector({dimensions}) <=> %(embedding)s
    LIMIT %(limit)s
)
SELECT id AS chunk_id, 1 - distance AS similarity FROM nearest ORDER BY distance, id

-- vector_arm_exact --
-- The same ranking without the approximate index: the yardstick for its recall.
SELECT c.id AS chunk_id, 1 - (c.embedding::vector({dimensions}) <=> %(embedding)s) AS similarity
FROM pgrecall.chunks c
{filter_joins}
WHERE c.embedding_space_id = {space_id} AND {document_filter}
ORDER BY (c.embedding::vector({dimensions}) <=> %(embedding)s) + 0, c.id
LIMIT %(limit)s

-- keyword_postings --
-- The keyword arm's postings: for each query term, the first %(depth)s entries of its
-- impact-ordered list (equal impacts by chunk id), so a common word costs no more than a rare
-- one, with what its BM25 needs; pgrecall.api.keyword scores them (documents by their terms'
-- frequencies summed over their chunks, each document's best chunk by chunk-level BM25). The
-- executor's aggregations took about three quarters of the arm's time when the scoring was
-- done here (issue 24): the postings leave as binary arrays (array_send) numpy reads at once.
-- The statistics are the base rows plus the deltas writers added since the last fold (0013):
-- a few index reads per term. A posting carries its document and both lengths (0014): without
-- a filter each list is an index-only scan and no chunk or document row is read.
-- Languages (0024): the query is analysed with the configuration of every language the index
-- holds (or of %(languages)s where given), and each (language, term) is a row of its own, with
-- its language's statistics: frequencies, counts and average lengths of that language's
-- documents alone. A document has one language, so its postings are of that language's rows.
-- Everything that depends on a term alone (both idfs, whose (df + 0.5) is numeric arithmetic,
-- and the average lengths) is computed once per term, in query_terms.
-- lengths: a posting's tf, chunk length and document length in one bigint (pgrecall.api.keyword.unpack):
-- three arrays instead of four take the arm's SQL about a tenth less time (array_agg's cost is per
-- value, issue 24). Each is capped to its field, a cap no chunk or document of a real index reaches
-- (a chunk holds at most its model's few hundred or thousand tokens, a file at most 10 MiB).
WITH stats AS MATERIALIZED (
    SELECT language,
           chunk_count::float8 AS chunks,
           greatest(term_total::float8 / nullif(chunk_count, 0), 1) AS chunk_length,
           document_count::float8 AS documents,
           greatest(term_total::float8 / nullif(document_count, 0), 1) AS document_length
    FROM (
        SELECT language, sum(chunk_count)::bigint AS chunk_count, sum(term_total)::bigint AS term_total,
               sum(document_count)::bigint AS document_count
        FROM (
            SELECT language, chunk_count, term_total, document_count FROM pgrecall.corpus_stats
            UNION ALL
            SELECT language, chunk_count, term_total, document_count FROM pgrecall.corpus_stat_deltas
        ) t
        GROUP BY language
    ) totals
    WHERE chunk_count > 0 AND (%(languages)s::text[] IS NULL OR language = ANY(%(languages)s::text[]))
),
query_terms AS MATERIALIZED (
    -- One row per (language, term).
    SELECT s.language, q.term,
           ln(1 + (s.chunks - ts.df + 0.5) / (ts.df + 0.5)) AS chunk_idf,
           ln(1 + (s.documents - ts.document_df + 0.5) / (ts.document_df + 0.5)) AS document_idf,
           s.chunk_length, s.document_length
    FROM stats s
    CROSS JOIN LATERAL (
        SELECT DISTINCT term
        FROM unnest(tsvector_to_array(
                 to_tsvector(s.language::regconfig, %(query)s) || array_to_tsvector(%(identifiers)s::text[])
             )) AS u(term)
    ) q
    CROSS JOIN LATERAL (
        SELECT sum(df)::integer AS df, sum(document_df)::integer AS document_df
        FROM (
            SELECT df, document_df FROM pgrecall.term_stats WHERE language = s.language AND term = q.term
            UNION ALL
            SELECT df, document_df FROM pgrecall.term_stat_deltas WHERE language = s.language AND term = q.term
        ) d
    ) ts
    WHERE ts.df > 0
)
SELECT q.chunk_idf, q.document_idf, q.chunk_length AS average_chunk_length,
       q.document_length AS average_document_length,
       array_send(m.chunk_ids) AS chunk_ids, array_send(m.document_ids) AS document_ids,
       array_send(m.lengths) AS lengths
FROM query_terms q
CROSS JOIN LATERAL (
    SELECT array_agg(p.chunk_id) AS chunk_ids, array_agg(p.document_id) AS document_ids,
           array_agg((least(p.tf, 32767)::bigint << 48) | (least(p.chunk_length, 65535)::bigint << 32)
                     | least(p.document_length, 4294967295)) AS lengths
    FROM (
        SELECT p.chunk_id, p.tf, p.document_id, p.chunk_length, p.document_length
        FROM pgrecall.postings p
        {filter_joins}
        WHERE p.language = q.language AND p.term = q.term AND {document_filter}
        ORDER BY p.impact DESC, p.chunk_id
        LIMIT %(depth)s
    ) p
) m
WHERE m.chunk_ids IS NOT NULL

-- embedding_spaces --
-- The distinct embedding spaces of documents with chunks (NULL: not recorded), by a loose
-- index scan over documents_embedding_space (0012): one probe per space, not per document.
WITH RECURSIVE spaces(space, present) AS (
    (SELECT embedding_space, true FROM pgrecall.documents
     WHERE chunk_count > 0 AND embedding_space IS NOT NULL ORDER BY embedding_space LIMIT 1)
    UNION ALL
    SELECT next.embedding_space, true
    FROM spaces s
    CROSS JOIN LATERAL (
        SELECT embedding_space FROM pgrecall.documents
        WHERE chunk_count > 0 AND embedding_space > s.space ORDER BY embedding_space LIMIT 1
    ) next
)
SELECT space FROM spaces
UNION ALL
SELECT NULL WHERE EXISTS (SELECT 1 FROM pgrecall.documents WHERE chunk_count > 0 AND embedding_space IS NULL)

-- query_spaces --
-- The embedding spaces of documents with chunks (the query embedding_spaces), each with its id and
-- width where the index ever held it (0023): what the vector arm needs, in one round trip.
-- rows: the chunks of the space, as the planner estimates a relation's rows (no count): its HNSW
-- index's tuples per page at the last VACUUM, ANALYZE or build, times its pages now; NULL while
-- that is not known (pgrecall.api.vector_effort then reads the graph as for the largest index).
SELECT s.space, e.id, e.dimensions,
       CASE WHEN i.reltuples > 0 AND i.relpages > 0
            THEN i.reltuples / i.relpages * (pg_relation_size(i.oid) / current_setting('block_size')::int)
       END::float8 AS rows
FROM ({embedding_spaces}) s
LEFT JOIN pgrecall.embedding_spaces e ON e.space = s.space
LEFT JOIN pg_class i ON i.relname = 'chunks_embedding_space_' || e.id AND i.relnamespace = 'pgrecall'::regnamespace

-- filtered_rows --
-- The planner's estimate of the chunks of one space the filters keep (pgrecall.api.vector_effort):
-- planned, never run. {space_id} as in vector_arm.
EXPLAIN (FORMAT JSON)
SELECT c.id
FROM pgrecall.chunks c
{filter_joins}
WHERE c.embedding_space_id = {space_id} AND {document_filter}

-- fetch_hits --
-- similarity: with the query's vector (NULL when it was not embedded: keyword mode).
-- keyword_words: whether a keyword match of the chunk holds a word that is no stop word
-- (pgrecall.api.passages.vouched). In a language of its own the query is analysed without that
-- language's stop words, so every match does; `simple` (language unsure) keeps every word, so
-- there a match counts when one of the query's words the chunk holds is a stop word of none of
-- %(stop_languages)s (the configurations of PGRECALL_LANGUAGES).
SELECT c.id AS chunk_id, d.id AS document_id, d.source_root, d.path, d.kind, d.title, c.heading, c.text,
       d.metadata, d.mtime, d.project, d.occurred_at,
       -- Of a chunk of the query's space only: another space's vectors are not comparable (nor,
       -- of another width, computable).
       CASE WHEN c.embedding_space_id = %(space_id)s
            THEN (1 - (c.embedding <=> %(embedding)s::vector))::float8 END AS similarity,
       c.ordinal,
       (c.language <> 'simple' OR EXISTS (
           SELECT FROM unnest(tsvector_to_array(
                    to_tsvector('simple', %(query)s) || array_to_tsvector(%(identifiers)s::text[])
                )) AS q(term)
           JOIN pgrecall.postings p ON p.chunk_id = c.id AND p.language = c.language AND p.term = q.term
           WHERE NOT EXISTS (SELECT FROM unnest(%(stop_languages)s::text[]) AS s(language)
                             WHERE to_tsvector(s.language::regconfig, q.term) = ''::tsvector)
       )) AS keyword_words
FROM pgrecall.chunks c
JOIN pgrecall.documents d ON d.id = c.document_id
WHERE c.id = ANY(%(chunk_ids)s)

-- passage_chunks --
-- The chunks of each (document, first ordinal, last ordinal) range, in document order: the text of
-- a passage joined from neighbouring hits (pgrecall.api.passages), the chunks between them included.
-- fresh_from: the chunk's text before it repeats the previous chunk's end (NULL: not recorded).
SELECT c.document_id, c.ordinal, c.text, c.fresh_from
FROM unnest(%(document_ids)s::bigint[], %(firsts)s::integer[], %(lasts)s::integer[]) AS r(document_id, first, last)
JOIN pgrecall.chunks c ON c.document_id = r.document_id AND c.ordinal BETWEEN r.first AND r.last
ORDER BY c.document_id, c.ordinal

-- candidate_languages --
-- The language of each candidate chunk (0024), for fusion (pgrecall.api.fuse.language_weights).
SELECT id AS chunk_id, language FROM pgrecall.chunks WHERE id = ANY(%(chunk_ids)s)

-- headlines --
-- Texts the web page shows of hits, each with the query's words marked (between %(start)s and
-- %(stop)s) as the keyword arm reads them in the language of the chunk it goes with: whole words,
-- stems matched (tomato: tomatoes), stop words never (pgrecall.api.web_text.marked).
SELECT ts_headline(l.language::regconfig, h.text, plainto_tsquery(l.language::regconfig, %(query)s),
                   format('HighlightAll=true, StartSel=%%s, StopSel=%%s', %(start)s::text, %(stop)s::text))
FROM unnest(%(texts)s::text[], %(chunk_ids)s::bigint[]) WITH ORDINALITY AS h(text, chunk_id, n)
CROSS JOIN LATERAL (
    SELECT coalesce((SELECT c.language FROM pgrecall.chunks c WHERE c.id = h.chunk_id), 'simple') AS language
) l
ORDER BY h.n

-- index_languages --
-- The languages the index holds documents of (0024): base rows plus deltas.
SELECT language FROM (
    SELECT language, document_count FROM pgrecall.corpus_stats
    UNION ALL
    SELECT language, document_count FROM pgrecall.corpus_stat_deltas
) t
GROUP BY language HAVING sum(document_count) > 0 ORDER BY language

-- candidate_facts --
-- What the ranking after fusion weighs (pgrecall.api.fuse.rerank): each candidate chunk's
-- document's project and own time (as a POSIX timestamp).
SELECT c.id AS chunk_id, d.project, extract(epoch FROM d.occurred_at)::float8 AS occurred
FROM pgrecall.chunks c
JOIN pgrecall.documents d ON d.id = c.document_id
WHERE c.id = ANY(%(chunk_ids)s)

-- recent_documents --
-- What was remembered or discussed lately: documents with chunks by their own time, newest
-- first; a memory (a note of the memory folder, root "memories") with its id.
SELECT d.id AS document_id, d.source_root, d.path, d.kind, d.title, d.project, d.occurred_at,
       CASE WHEN d.source_root = (SELECT r.path FROM pgrecall.roots r WHERE r.name = 'memories')
            THEN d.metadata ->> 'id' END AS memory_id
FROM pgrecall.documents d
WHERE d.chunk_count > 0
  AND d.occurred_at >= %(since)s
  AND (%(project)s::text IS NULL OR d.project = %(project)s)
  AND (%(kind)s::text IS NULL OR d.kind = %(kind)s)
ORDER BY d.occurred_at DESC, d.id DESC
LIMIT %(limit)s

-- index_is_set_up --
-- pgrecall.api.read_queries: has a migration created what searches read? (searches never migrate)
SELECT to_regclass('pgrecall.documents') IS NOT NULL AND to_regclass('pgrecall.chunks') IS NOT NULL
   AND to_regclass('pgrecall.postings') IS NOT NULL AND to_regclass('pgrecall.corpus_stats') IS NOT NULL
   AND to_regclass('pgrecall.term_stats') IS NOT NULL AND to_regclass('pgrecall.roots') IS NOT NULL
   AND to_regclass('pgrecall.term_stat_deltas') IS NOT NULL AND to_regclass('pgrecall.corpus_stat_deltas') IS NOT NULL

-- wait_for_migration --
-- pgrecall.api.read_queries: returns once no migration is under way (pgrecall.postgres.migrator holds this lock,
-- exclusively, for its whole transaction); a shared lock, taken and given back at once.
SELECT pg_advisory_lock_shared(%(key)s), pg_advisory_unlock_shared(%(key)s)

-- reader_role_available --
-- May this login SET ROLE pgrecall_reader? Since PostgreSQL 16 a member may lack the SET option (0015).
SELECT CASE WHEN current_setting('server_version_num')::int >= 160000
            THEN pg_has_role(current_user, 'pgrecall_reader', 'SET')
            ELSE pg_has_role(current_user, 'pgrecall_reader', 'MEMBER') END
FROM pg_roles WHERE rolname = 'pgrecall_reader'

-- document_by_id --
SELECT id, source_root, path, kind, title, metadata, mtime, indexed_at, chunk_count, error, project, occurred_at
FROM pgrecall.documents WHERE id = %(id)s

-- document_by_path --
-- An absolute path ("/notes/a.md"), or one relative to a root ("a.md").
SELECT id, source_root, path, kind, title, metadata, mtime, indexed_at, chunk_count, error, project, occurred_at
FROM pgrecall.documents
WHERE (source_root || '/' || path) = %(path)s OR path = %(path)s
ORDER BY (source_root || '/' || path) = %(path)s DESC, id
LIMIT 1

-- document_chunks --
-- chunk_id: what a hit names its passage's chunks by (chunk_id, chunk_ids).
SELECT ordinal, heading, text, id AS chunk_id FROM pgrecall.chunks WHERE document_id = %(id)s ORDER BY ordinal

-- reader_can_log_in --
-- pgrecall.api.reader: may the search side log in as the reader role (0008)?
SELECT rolcanlogin FROM pg_roles WHERE rolname = 'pgrecall_reader'

-- reader_password --
-- pgrecall.api.reader: the reader's password, as pgrecall migrate stored it (pgrecall.postgres.reader_login).
SELECT password FROM pgrecall.reader_login
