-- The caller's tasks in a thread, newest first (created desc, then id), whole, at most $3:
-- read in order from tasks_scope (owner, thread, created_at DESC, id), stopping at the limit.
-- $1 owner, $2 thread, $3 limit.
SELECT
{task_columns}
FROM tasks
WHERE owner = $1 AND thread = $2
ORDER BY created_at DESC, id
LIMIT $3
