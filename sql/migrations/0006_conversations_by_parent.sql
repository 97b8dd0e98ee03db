-- An export's conversations are identified by their parent row, not by a path
-- prefix: "h.md#x.md" may be a real file beside "h.md", and removing or
-- renaming h.md must not touch it. A file's path is unique within its root; a
-- conversation's within its export.
ALTER TABLE pgrecall.documents DROP CONSTRAINT documents_source_root_path_key;
CREATE UNIQUE INDEX documents_file_path ON pgrecall.documents (source_root, path) WHERE parent_id IS NULL;
CREATE UNIQUE INDEX documents_child_path ON pgrecall.documents (parent_id, path) WHERE parent_id IS NOT NULL;
-- documents_child_path serves lookups by parent (and ON DELETE CASCADE) as well.
DROP INDEX pgrecall.documents_parent_id;
