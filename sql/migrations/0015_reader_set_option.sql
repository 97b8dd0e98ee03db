-- The search side's fallback takes pgrecall_reader with SET ROLE (0003, pgrecall.api.store):
-- a search that cannot log in as the reader (a password changed behind pgrecall's back, before
-- the next migration renews it) still searches. Since PostgreSQL 16 the role a CREATEROLE login
-- creates is granted to that login with ADMIN OPTION but without the SET option: 0003 found it a
-- member, granted nothing, and SET ROLE is refused, so such a search could not connect at all.
-- ADMIN OPTION lets the login grant itself the SET option.
DO $$
BEGIN
    IF current_setting('server_version_num')::int < 160000
       OR NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'pgrecall_reader') THEN
        RETURN;  -- no SET option before 16; no role: 0003 could not create it
    END IF;
    IF pg_has_role(current_user, 'pgrecall_reader', 'SET') THEN
        RETURN;
    END IF;
    BEGIN
        EXECUTE format('GRANT pgrecall_reader TO %I WITH SET TRUE', current_user);
    EXCEPTION WHEN insufficient_privilege OR invalid_grant_operation THEN
        RAISE NOTICE 'cannot take pgrecall_reader with SET ROLE: where the reader cannot log in, searches use read-only transactions only';
    END;
END
$$;
