-- One task, whole, if it is the caller's and in this thread.
-- $1 owner, $2 thread, $3 id.
SELECT
{task_columns}
FROM tasks
WHERE id = $3 AND owner = $1 AND thread = $2
