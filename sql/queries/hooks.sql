-- Queries of the Claude Code hooks (pgrecall.cli.hook_commands): read-only, run as the reader role. Values are always parameters.

-- recent --
-- The newest memories (notes of the memory folder with an id in their front matter) and Claude Code
-- sessions (not a subagent's, not the one starting), newest first by the file's modification time
-- (a memory's write sets it; a session's file changes with its last message). Where a document
-- names its project (front matter, or the session's cwd), only those of the hook's cwd, or of a
-- folder it is in, or whose project is a name the cwd's project goes by (project: apollo for a
-- cwd in ~/code/apollo), are listed.
(
    SELECT d.id AS document_id, 'memory' AS kind, d.source_root, d.path, d.title, d.metadata,
           d.mtime, coalesce(first.text, '') AS text
    FROM pgrecall.documents d
    LEFT JOIN LATERAL (
        SELECT c.text FROM pgrecall.chunks c WHERE c.document_id = d.id ORDER BY c.ordinal LIMIT 1
    ) first ON TRUE
    WHERE d.source_root = %(memory_root)s
      AND d.parent_id IS NULL
      AND d.error IS NULL
      AND d.metadata ? 'id'
      AND (d.metadata ->> 'project' IS NULL
           OR %(cwd)s::text = d.metadata ->> 'project'
           OR starts_with(%(cwd)s::text, (d.metadata ->> 'project') || '/')
           OR d.metadata ->> 'project' = ANY(%(project_names)s::text[]))
    ORDER BY d.mtime DESC NULLS LAST, d.id DESC
    LIMIT %(limit)s
)
UNION ALL
(
    SELECT d.id AS document_id, 'session' AS kind, d.source_root, d.path, d.title, d.metadata,
           d.mtime, '' AS text
    FROM pgrecall.documents d
    WHERE d.kind = 'claude_code_session'
      AND d.error IS NULL
      AND NOT d.metadata ? 'parent_session_id'
      AND (%(session_id)s::text IS NULL OR d.metadata ->> 'session_id' IS DISTINCT FROM %(session_id)s::text)
      AND (d.metadata ->> 'project' IS NULL
           OR %(cwd)s::text = d.metadata ->> 'project'
           OR starts_with(%(cwd)s::text, (d.metadata ->> 'project') || '/')
           OR d.metadata ->> 'project' = ANY(%(project_names)s::text[]))
    ORDER BY d.mtime DESC NULLS LAST, d.id DESC
    LIMIT %(limit)s
)
