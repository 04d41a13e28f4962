-- The due poll work, in claim order: pollable, no cancel work in progress (a cancel that was
-- acknowledged or dead-lettered lets polling resume), due at $1, poll lease free or expired.
-- The static conditions are the predicate of the partial index tasks_poll_due_v2 (migration
-- 0012), whose order (poll_next_at, id) is the claim order. claim_poll.sql picks exactly these
-- rows.
-- $1 now, $2 limit.
SELECT id FROM tasks
WHERE remote_status IN ('submitted', 'working', 'input_required')
  AND cancel_status <> 'requested'
  AND poll_next_at <= $1
  AND (poll_lease_expires_at IS NULL OR poll_lease_expires_at <= $1)
ORDER BY poll_next_at, id
LIMIT $2
