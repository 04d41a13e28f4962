-- The schemas holding a table named `_sqlx_migrations`, other than the configured one: where
-- a migration history of tasklatch (or of anyone else) may live. Read before migrating a
-- schema that has no history yet, to find an installation made before tasklatch had a schema
-- of its own (its tables and history in the connection's default schema, usually `public`).
-- $1 the configured schema.
SELECT n.nspname::text
FROM pg_catalog.pg_class c
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE c.relname = '_sqlx_migrations'
  AND c.relkind IN ('r', 'p')
  AND n.nspname <> $1
ORDER BY n.nspname
