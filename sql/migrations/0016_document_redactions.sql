-- Secrets redacted before a document's chunks were made (pgrecall.worker.redact), by kind:
-- {"github token": 1, "password": 2}. The secrets themselves are nowhere in the index.
ALTER TABLE pgrecall.documents ADD COLUMN redactions jsonb NOT NULL DEFAULT '{}'::jsonb;

COMMENT ON COLUMN pgrecall.documents.redactions IS
'Secrets replaced by a marker ("[redacted: github token]") in this document''s title, metadata and '
'chunks, counted by kind; {} when none were found or redaction was off (PGRECALL_REDACT_SECRETS).';
