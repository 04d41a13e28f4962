-- A submit's row, whole and locked for the rest of the transaction, so recording its handle
-- and a loop ending it as untracked exclude each other (DOMAIN §7). $1 id.
SELECT
{task_columns}
FROM tasks
WHERE id = $1
FOR UPDATE
