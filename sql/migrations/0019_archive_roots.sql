-- A root whose files pgrecall keeps when the source deletes them (Claude Code's sessions):
-- the folder holding the copies, NULL for an ordinary root. In the database, not only in
-- the config file, so that every worker (`pgrecall worker` reads no config) archives
-- rather than removes a deleted file of such a root.
ALTER TABLE pgrecall.roots ADD COLUMN archive_folder text;
