-- Queries of the migrating side that provision the search side's login (pgrecall.postgres.reader_login).
-- The search side reads the stored login with its own queries (search.sql) and writes nothing.

-- lock_reader_password --
-- One process at a time renews the password; the others then find the one it set working.
SELECT pg_advisory_xact_lock(hashtext('pgrecall_reader_password'))

-- reader_can_log_in --
SELECT rolcanlogin FROM pg_roles WHERE rolname = 'pgrecall_reader'

-- reader_password --
SELECT password FROM pgrecall.reader_login

-- set_reader_password --
-- {verifier} is a psycopg.sql.Literal: ALTER ROLE takes no parameters.
ALTER ROLE pgrecall_reader PASSWORD {verifier}

-- save_reader_password --
INSERT INTO pgrecall.reader_login (id, password) VALUES (true, %(password)s)
ON CONFLICT (id) DO UPDATE SET password = EXCLUDED.password, set_at = now()
