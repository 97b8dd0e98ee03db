"""PostgreSQL: where the database is (database), its migrations (migrator), the named queries of
sql/queries (queries), the advisory lock keys (locks) and the search side's role and login."""
