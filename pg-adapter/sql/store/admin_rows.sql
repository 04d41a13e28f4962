-- Rows after an id, whole, in id (byte) order. Unscoped: for operators.
-- $1 after ('' from the start: ids are never empty), $2 limit.
SELECT
{task_columns}
FROM tasks
WHERE id > $1
ORDER BY id
LIMIT $2
