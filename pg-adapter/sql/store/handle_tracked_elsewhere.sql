-- Whether another row of the owner on the server already tracks the remote task: a submit's
-- late handle of such a task is a duplicate, not a stranger to cancel (DOMAIN §7). Served by
-- the partial unique index tasks_tracked_handle_unique. $1 id, $2 owner, $3 server,
-- $4 remote task id (never empty).
SELECT EXISTS (
    SELECT 1 FROM tasks
    WHERE owner = $2 AND server = $3 AND remote_task_id = $4 AND remote_task_id <> ''
      AND id <> $1
) AS tracked
