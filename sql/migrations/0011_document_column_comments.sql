-- What the documents columns hold, as the code writes them, in the catalog
-- (\d+ pgrecall.documents). 0001's inline comments stay as they were applied:
-- an applied migration is checksummed and never edited. Its list of error
-- stages lacks `detect`; the kinds are named in pgrecall/kinds.py.

COMMENT ON COLUMN pgrecall.documents.kind IS
'markdown, text, claude_conversation (one conversation, path "<file>#<uuid>"): rows with chunks; '
'claude_export: the export file itself, parent of its conversations, no chunks of its own; '
'unsupported: a file skipped, not indexed (its type, its size, a link out of its root). '
'A file indexed before that fails now keeps its kind and its chunks, unless its link now leads '
'out of its root. Names: pgrecall/kinds.py.';

COMMENT ON COLUMN pgrecall.documents.error_stage IS
'Where the last attempt stopped: detect (the file is skipped: its type or size, decided '
'before reading, a link out of its root, or JSON that is not a Claude export), read, parse, '
'chunk, embed, store. '
'NULL when the last attempt succeeded.';

COMMENT ON COLUMN pgrecall.documents.error IS
'Why the last attempt failed, or why the file is skipped (kind unsupported): one line. '
'NULL when the last attempt succeeded.';

COMMENT ON COLUMN pgrecall.documents.content_hash IS
'sha256 of the file (of the conversation''s JSON for claude_conversation). NULL when no content '
'is recorded: the file was not read (skipped before reading, or unreadable), the last attempt '
'failed at embed or store, or an export''s conversations are being written; the next run reads it again.';
