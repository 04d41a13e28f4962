-- A cancel request in scope (transitions::cancel::request). The matching rows are locked; the
-- row changes only for a single, non-terminal, not yet requested match: it gets
-- cancel_requested_at = now and cancel work due now. The poll lease is left as it is: the poll
-- guard refuses every result while the cancel work is in progress, and ending that work
-- (finish_cancels.sql) clears the poll lease. Returns the match count and, per match,
-- its id, status, whether a cancel was already requested and whether it was updated (one row
-- with NULLs when nothing matched).
-- $1 owner, $2 thread, $3 by name, $4 id (when not by name), $5 name (when by name), $6 now.
WITH matched AS (
    SELECT id, remote_status, cancel_requested_at FROM tasks
    WHERE owner = $1 AND thread = $2
      AND ((NOT $3 AND id = $4)
           OR ($3 AND name = $5
               AND remote_status NOT IN ('completed', 'failed', 'cancelled')))
    ORDER BY id
    FOR UPDATE
),
counted AS (
    SELECT count(*) AS matches FROM matched
),
requested AS (
    UPDATE tasks AS task SET
        cancel_requested_at = $6,
        cancel_status = 'requested',
        cancel_due_at = $6,
        remote_updated_at = $6
    FROM matched, counted
    WHERE task.id = matched.id
      AND counted.matches = 1
      AND matched.remote_status NOT IN ('completed', 'failed', 'cancelled')
      AND matched.cancel_requested_at IS NULL
      AND task.cancel_requested_at IS NULL
    RETURNING task.id
)
SELECT counted.matches, matched.id, matched.remote_status,
    matched.cancel_requested_at IS NOT NULL AS requested,
    requested.id IS NOT NULL AS updated
FROM counted
LEFT JOIN matched ON true
LEFT JOIN requested ON requested.id = matched.id
ORDER BY matched.id
