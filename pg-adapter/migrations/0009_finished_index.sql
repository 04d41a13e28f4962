-- no-transaction
-- Retention (sql/store/prune_finished.sql) reads finished rows oldest remote update first:
-- this partial index holds only terminal rows, in that order, so a prune reads the candidates
-- it deletes and stops at its limit instead of scanning the table.
--
-- Built CONCURRENTLY, outside a transaction (the first line tells sqlx): writes to `tasks` go
-- on during the build (it takes SHARE UPDATE EXCLUSIVE, which only conflicts with other schema
-- changes and VACUUM), at the price of two table scans and waiting for the transactions open
-- when it starts. One statement per file: Postgres refuses CONCURRENTLY inside a multi-statement
-- query. If the build fails midway it leaves an INVALID index and sqlx records nothing: drop it
-- (DROP INDEX CONCURRENTLY tasks_finished) and run `tasklatch migrate` again.
CREATE INDEX CONCURRENTLY tasks_finished ON tasks (remote_updated_at, id)
    WHERE remote_status IN ('completed', 'failed', 'cancelled');
