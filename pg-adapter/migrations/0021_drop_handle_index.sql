-- no-transaction
-- Drops the remote-handle index of 0001, which also counted submits' intents (empty
-- remote_task_id) as handles; 0020 built its replacement. CONCURRENTLY: no lock that blocks
-- reads or writes of tasks while it waits.
DROP INDEX CONCURRENTLY IF EXISTS tasks_handle_unique;
