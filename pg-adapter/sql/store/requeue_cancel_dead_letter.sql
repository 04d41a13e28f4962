-- An operator's requeue of a cancel dead letter (transitions::cancel::requeue): the cancel work
-- is requested again, due now, with its failures, outage and last error forgotten, so the
-- cancel loop calls the server again (and polling stands still while it is pending, as after
-- the first request). Only a dead-lettered cancel of a task that is not terminal changes (a
-- dead-lettered cancel holds no cancel lease). Returns the row's state before the requeue (no
-- row at all: no such task).
-- $1 id, $2 now.
WITH target AS (
    SELECT id,
        cancel_status = 'dead_letter' AS dead_lettered,
        remote_status IN ('completed', 'failed', 'cancelled') AS terminal
    FROM tasks
    WHERE id = $1
    FOR UPDATE
),
requeued AS (
    UPDATE tasks AS task SET
        cancel_status = 'requested',
        cancel_due_at = $2,
        cancel_failures = 0,
        cancel_last_error = NULL,
        cancel_unavailable_since = NULL,
        cancel_outages = 0
    FROM target
    WHERE task.id = target.id
      AND target.dead_lettered
      AND NOT target.terminal
    RETURNING task.id
)
SELECT target.dead_lettered, target.terminal
FROM target
LEFT JOIN requeued ON true
