-- Whether the configured schema holds a migration history.
-- $1 the schema.
SELECT to_regclass(quote_ident($1) || '._sqlx_migrations') IS NOT NULL
