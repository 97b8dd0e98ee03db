-- The search side's role: it may read the index and nothing else. No write on
-- any table, no access to the queue's tables; the queue depth it reports comes
-- through one function that runs with its owner's rights.
DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'pgrecall_reader') THEN
        IF (SELECT rolsuper OR rolcreaterole FROM pg_roles WHERE rolname = current_user) THEN
            CREATE ROLE pgrecall_reader NOLOGIN;
        ELSE
            RAISE NOTICE 'cannot create role pgrecall_reader: the search side will rely on read-only transactions';
            RETURN;
        END IF;
    END IF;
    -- Lets the migrating (login) user take the role for searching with SET ROLE.
    IF NOT pg_has_role(current_user, 'pgrecall_reader', 'MEMBER') THEN
        EXECUTE format('GRANT pgrecall_reader TO %I', current_user);
    END IF;
END
$$;

CREATE FUNCTION pgrecall.queue_depth() RETURNS bigint
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public
AS $$ SELECT count(*) FROM public.procrastinate_jobs WHERE queue_name = 'pgrecall' AND status = 'todo' $$;
REVOKE ALL ON FUNCTION pgrecall.queue_depth() FROM PUBLIC;

DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'pgrecall_reader') THEN
        GRANT USAGE ON SCHEMA pgrecall TO pgrecall_reader;
        GRANT SELECT ON pgrecall.documents, pgrecall.chunks, pgrecall.postings, pgrecall.term_stats,
                        pgrecall.corpus_stats, pgrecall.roots TO pgrecall_reader;
        GRANT EXECUTE ON FUNCTION pgrecall.queue_depth() TO pgrecall_reader;
        -- The vector type's functions live in public.
        GRANT USAGE ON SCHEMA public TO pgrecall_reader;
    END IF;
END
$$;
