-- The queue's name is defined once, in pgrecall.status (QUEUE): queue_depth()
-- of 0003 repeated it as 'pgrecall'. Its replacement takes the name from the
-- caller. Still the search side's only view of the queue: it runs with its
-- owner's rights, and only the reader role may call it.
CREATE FUNCTION pgrecall.queue_depth(queue text) RETURNS bigint
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public
AS $$ SELECT count(*) FROM public.procrastinate_jobs WHERE queue_name = queue_depth.queue AND status = 'todo' $$;
REVOKE ALL ON FUNCTION pgrecall.queue_depth(text) FROM PUBLIC;

DROP FUNCTION pgrecall.queue_depth();

DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'pgrecall_reader') THEN
        GRANT EXECUTE ON FUNCTION pgrecall.queue_depth(text) TO pgrecall_reader;
    END IF;
END
$$;
