-- The search side logs in as pgrecall_reader itself, where the migrating user
-- may allow it. SET ROLE on the migrating user's own login (0003) can be undone
-- by the connection (RESET ROLE, SET SESSION AUTHORIZATION); a connection that
-- logged in as the reader has no more rights to return to. Where the migrating
-- user may not change the role, the search side keeps 0003's SET ROLE and
-- read-only transactions, and says so in a warning (pgrecall.api.reader).
DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'pgrecall_reader') THEN
        RETURN;  -- 0003 could not create it
    END IF;
    BEGIN
        ALTER ROLE pgrecall_reader LOGIN;
        -- A second fence: its transactions are read-only unless it asks otherwise
        -- (and it may ask: its grants are what keeps it from writing).
        ALTER ROLE pgrecall_reader SET default_transaction_read_only = on;
    EXCEPTION WHEN insufficient_privilege THEN
        RAISE NOTICE 'cannot let pgrecall_reader log in: the search side will use SET ROLE and read-only transactions';
        RETURN;
    END;
    BEGIN
        -- PUBLIC has CONNECT by default; this keeps the reader in where an administrator revoked it.
        EXECUTE format('GRANT CONNECT ON DATABASE %I TO pgrecall_reader', current_database());
    EXCEPTION WHEN insufficient_privilege THEN
        RAISE NOTICE 'cannot grant CONNECT on this database to pgrecall_reader';
    END;
END
$$;

-- The reader's password, where the server asks for one (an external server;
-- the embedded one trusts its local socket). pgrecall.api.reader sets it, as
-- a SCRAM verifier, the first time the reader cannot log in without it, and
-- every search process, on any machine, reads it here: one password per
-- database, not one per data directory. Only the migrating user reads it.
CREATE TABLE pgrecall.reader_login (
    id boolean PRIMARY KEY DEFAULT true CHECK (id),
    password text NOT NULL,
    set_at timestamptz NOT NULL DEFAULT now()
);
REVOKE ALL ON pgrecall.reader_login FROM PUBLIC;
