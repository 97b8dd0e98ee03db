-- What configuring a connection reads (pgrecall.postgres.database).

-- vector_types --
-- The types pgvector's adapters need, in one statement: pgvector.psycopg's register_vector reads
-- them one by one, each in a transaction of its own (12 round trips on every new connection).
-- The same columns as psycopg's TypeInfo query; a type the extension lacks is absent.
SELECT t.typname AS name, t.oid, t.typarray AS array_oid, t.oid::regtype::text AS regtype, t.typdelim AS delimiter
FROM unnest(%(names)s::text[]) AS wanted(name)
JOIN pg_type t ON t.oid = to_regtype(wanted.name)
