"""Advisory lock keys, each defined once: the side that holds a lock and the side that waits for it share the number."""

# Held by pgrecall.postgres.migrator for a migration's whole transaction; searches wait for it (pgrecall.api.read_queries).
MIGRATION_LOCK_KEY = 0x70677263  # "pgrc"
# Held while a root is registered: two processes registering the same root at once (four memory
# services starting together) would otherwise race on pgrecall.roots' second unique key, the path.
ROOTS_LOCK_KEY = 0x70677274  # "pgrt"
# Held while a new embedding space gets its row and its HNSW index (pgrecall.embedding_space_id,
# migration 0023, which spells the number out: a migration cannot import it).
EMBEDDING_SPACES_LOCK_KEY = 0x70677273  # "pgrs"
# Each root a watcher watches: a session-level shared advisory lock held while it runs, keyed
# hashtextextended(WATCH_LOCK_PREFIX || path, 0) (sql/queries/service.sql), which `pgrecall status`
# looks for in pg_locks (sql/queries/status.sql): the server drops it when the process ends.
WATCH_LOCK_PREFIX = "pgrecall watch "
