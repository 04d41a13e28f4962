-- Claims due cancel work (the rows of cancel_candidates.sql; rows another transaction holds
-- locked are skipped): each gets a fresh cancel lease — owner $3, token = its claim counter + 1,
-- expiry $4 — and is returned whole, in (due, id) order.
-- $1 now, $2 limit, $3 worker, $4 lease expiry.
WITH picked AS (
    SELECT id FROM tasks
    WHERE cancel_status = 'requested'
      AND cancel_due_at <= $1
      AND (cancel_lease_expires_at IS NULL OR cancel_lease_expires_at <= $1)
    ORDER BY cancel_due_at, id
    LIMIT $2
    FOR UPDATE SKIP LOCKED
),
claimed AS (
    UPDATE tasks AS task SET
        cancel_claims = task.cancel_claims + 1,
        cancel_lease_owner = $3,
        cancel_lease_token = task.cancel_claims + 1,
        cancel_lease_expires_at = $4
    FROM picked
    WHERE task.id = picked.id
    RETURNING task.*
)
SELECT
{task_columns}
FROM claimed
ORDER BY cancel_due_at, id
