-- Which section a chunk was cut from, and where its overlap ends: what an edit
-- needs to take an unchanged section's chunks as they are instead of cutting
-- the section again (counting its word pieces is most of a re-index of a long
-- journal with one entry appended). section_key is pgrecall.worker.chunk.section_key
-- of the section; fresh_from is Chunk.fresh_from. NULL on rows written before:
-- their sections are cut again once, and the write that keeps them fills both.
ALTER TABLE pgrecall.chunks ADD COLUMN section_key text, ADD COLUMN fresh_from integer;
