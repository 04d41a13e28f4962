-- no-transaction
-- The per-run context projection reads a thread's tasks most recently updated first and stops
-- at 20 (sql/store/list_recent_tasks.sql): this index serves that order, as tasks_scope
-- (0001) serves the listing's newest-first order.
--
-- Built CONCURRENTLY, outside a transaction, like 0009 (see there: what it locks, and what to
-- do if it fails midway: DROP INDEX CONCURRENTLY tasks_recent, then migrate again).
CREATE INDEX CONCURRENTLY tasks_recent ON tasks (owner, thread, remote_updated_at DESC, id);
