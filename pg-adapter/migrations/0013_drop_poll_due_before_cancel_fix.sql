-- no-transaction
-- Drops the poll claim's old partial index (0001: its predicate `cancel_requested_at IS NULL`
-- left out every task whose cancel was acknowledged or dead-lettered); 0012 built its
-- replacement. CONCURRENTLY: no lock that blocks reads or writes of tasks while it waits.
DROP INDEX CONCURRENTLY IF EXISTS tasks_poll_due;
