-- The due notification work, in claim order: undelivered work (event_version >
-- notified_version) in a claimable status, due at $1, notification lease free or expired. The
-- static conditions are the predicate of the partial index tasks_notify_due.
-- claim_notify.sql picks exactly these rows.
-- $1 now, $2 limit.
SELECT id FROM tasks
WHERE notify_status IN ('pending', 'claimed', 'retry', 'dispatched')
  AND event_version > notified_version
  AND notify_due_at <= $1
  AND (notify_lease_expires_at IS NULL OR notify_lease_expires_at <= $1)
ORDER BY notify_due_at, id
LIMIT $2
