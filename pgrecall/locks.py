"""Advisory lock keys, each defined once: the side that holds a lock and the side that waits for it share the number."""

# Held by pgrecall.migrate for a migration's whole transaction; searches wait for it (pgrecall.api.store).
MIGRATION_LOCK_KEY = 0x70677263  # "pgrc"
