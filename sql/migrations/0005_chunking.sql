-- How a document's chunks were made (chunker version and size). A file whose
-- chunks were made another way is chunked and embedded again even though its
-- content did not change, so a new chunk size reaches the whole index.
-- Existing rows have none: the next reconciliation or `pgrecall index` redoes them.
ALTER TABLE pgrecall.documents ADD COLUMN chunking text;
