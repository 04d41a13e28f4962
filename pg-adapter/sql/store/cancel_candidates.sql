-- The due cancel work, in claim order: a cancel requested and not done, due at $1, cancel lease
-- free or expired. The static condition is the predicate of the partial index tasks_cancel_due.
-- claim_cancel.sql picks exactly these rows.
-- $1 now, $2 limit.
SELECT id FROM tasks
WHERE cancel_status = 'requested'
  AND cancel_due_at <= $1
  AND (cancel_lease_expires_at IS NULL OR cancel_lease_expires_at <= $1)
ORDER BY cancel_due_at, id
LIMIT $2
