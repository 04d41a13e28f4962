-- Makes the rest of this transaction read-only and gives it a statement timeout of its own
-- (both is_local: they end with the transaction). PgStore::backlog runs backlog.sql after it,
-- with a timeout shorter than the session's, so a metrics scrape can neither write nor hold a
-- connection or load the database for long.
-- $1 the timeout, a Postgres time setting ('2000ms').
SELECT
    set_config('statement_timeout', $1, true) AS statement_timeout,
    set_config('transaction_read_only', 'on', true) AS read_only
