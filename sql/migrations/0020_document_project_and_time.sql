-- A document's project and its own time (pgrecall.worker.document.ParsedDocument), for the
-- project filter and boost and the since/before filters of searches, and `pgrecall recent`.
ALTER TABLE pgrecall.documents ADD COLUMN project text, ADD COLUMN occurred_at timestamptz;
-- A root's project from the config file ([[roots]] project = ...): its documents' project
-- where they name none of their own. In the database, as archive_folder is, since a worker
-- reads no config.
ALTER TABLE pgrecall.roots ADD COLUMN project text;

COMMENT ON COLUMN pgrecall.documents.project IS
'The project the document belongs to: a folder (the git top-level of a note''s front-matter '
'project, a memory''s project or a Claude Code session''s cwd) or a name (a claude.ai project''s), '
'else its root''s project (pgrecall.roots.project); NULL for none (a global document).';
COMMENT ON COLUMN pgrecall.documents.occurred_at IS
'The document''s own time: a note''s front-matter created (a memory''s creation), a session''s or '
'conversation''s last message, else the file''s modification time (else when it was indexed).';
COMMENT ON COLUMN pgrecall.roots.project IS
'The project of this root''s documents that name none of their own; NULL for none.';

-- The index written before this migration: what the metadata already holds. A project path is
-- taken as stored (a session's cwd, not yet its git top-level): the next write of the document
-- normalises it. A time that does not parse counts as absent.
CREATE FUNCTION pg_temp.moment(value text) RETURNS timestamptz LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN value::timestamptz;
EXCEPTION WHEN data_exception THEN
    RETURN NULL;
END
$$;

UPDATE pgrecall.documents d SET
    project = CASE WHEN jsonb_typeof(d.metadata -> 'project') = 'string'
                   THEN nullif(btrim(d.metadata ->> 'project'), '') END,
    occurred_at = coalesce(
        CASE WHEN d.kind = 'markdown' THEN pg_temp.moment(d.metadata ->> 'created')
             WHEN d.kind = 'claude_code_session' THEN pg_temp.moment(d.metadata ->> 'last_timestamp')
             WHEN d.kind IN ('claude_conversation', 'chatgpt_conversation', 'claude_project')
                 THEN pg_temp.moment(d.metadata ->> 'updated_at')
        END,
        d.mtime,
        d.indexed_at
    );

CREATE INDEX documents_project ON pgrecall.documents (project) WHERE project IS NOT NULL;
CREATE INDEX documents_occurred_at ON pgrecall.documents (occurred_at);
