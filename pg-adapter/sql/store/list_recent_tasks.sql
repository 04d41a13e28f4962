-- The caller's tasks in a thread, most recently updated first (remote update desc, then id),
-- whole, at most $3 (the per-run context projection): read in order from tasks_recent
-- (owner, thread, remote_updated_at DESC, id; migration 0010), stopping at the limit.
-- $1 owner, $2 thread, $3 limit.
SELECT
{task_columns}
FROM tasks
WHERE owner = $1 AND thread = $2
ORDER BY remote_updated_at DESC, id
LIMIT $3
