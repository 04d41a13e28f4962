-- Claims due notification work (the rows of notify_candidates.sql; rows another transaction
-- holds locked are skipped): each gets a fresh notification lease — owner $3, token = its claim
-- counter + 1, expiry $4 — and its snapshot frozen (transitions::outbox::claim), and is
-- returned whole, in (due, id) order.
--
-- Freezing the snapshot: a row that is not dispatched and has no frozen snapshot, or has a newer
-- version with an event, gets dispatch_version/dispatch_event rebuilt from the latest event
-- ("rebuilt" below); if that is a new version, the attempt, the failures and the run start
-- over ("a new version" below). A dispatched row keeps everything. A pending or rebuilt row
-- becomes claimed.
-- $1 now, $2 limit, $3 worker, $4 lease expiry.
WITH picked AS (
    SELECT id FROM tasks
    WHERE notify_status IN ('pending', 'claimed', 'retry', 'dispatched')
      AND event_version > notified_version
      AND notify_due_at <= $1
      AND (notify_lease_expires_at IS NULL OR notify_lease_expires_at <= $1)
    ORDER BY notify_due_at, id
    LIMIT $2
    FOR UPDATE SKIP LOCKED
),
claimed AS (
    UPDATE tasks AS task SET
        notify_claims = task.notify_claims + 1,
        notify_lease_owner = $3,
        notify_lease_token = task.notify_claims + 1,
        notify_lease_expires_at = $4,
        -- a new version: the attempt starts over
        dispatch_attempt = CASE
            WHEN ((task.notify_status <> 'dispatched'
                   AND (task.dispatch_event IS NULL
                        OR (task.dispatch_version < task.event_version
                            AND task.event IS NOT NULL)))
                  AND task.event_version <> task.dispatch_version)
            THEN 0 ELSE task.dispatch_attempt END,
        -- a new version: the failures start over
        notify_failures = CASE
            WHEN ((task.notify_status <> 'dispatched'
                   AND (task.dispatch_event IS NULL
                        OR (task.dispatch_version < task.event_version
                            AND task.event IS NOT NULL)))
                  AND task.event_version <> task.dispatch_version)
            THEN 0 ELSE task.notify_failures END,
        -- a new version: no run yet
        run_id = CASE
            WHEN ((task.notify_status <> 'dispatched'
                   AND (task.dispatch_event IS NULL
                        OR (task.dispatch_version < task.event_version
                            AND task.event IS NOT NULL)))
                  AND task.event_version <> task.dispatch_version)
            THEN NULL ELSE task.run_id END,
        -- rebuilt: freeze the latest event
        dispatch_version = CASE
            WHEN (task.notify_status <> 'dispatched'
                  AND (task.dispatch_event IS NULL
                       OR (task.dispatch_version < task.event_version
                           AND task.event IS NOT NULL)))
            THEN task.event_version ELSE task.dispatch_version END,
        dispatch_event = CASE
            WHEN (task.notify_status <> 'dispatched'
                  AND (task.dispatch_event IS NULL
                       OR (task.dispatch_version < task.event_version
                           AND task.event IS NOT NULL)))
            THEN task.event ELSE task.dispatch_event END,
        -- pending or rebuilt: claimed
        notify_status = CASE
            WHEN task.notify_status = 'pending'
              OR (task.notify_status <> 'dispatched'
                  AND (task.dispatch_event IS NULL
                       OR (task.dispatch_version < task.event_version
                           AND task.event IS NOT NULL)))
            THEN 'claimed' ELSE task.notify_status END
    FROM picked
    WHERE task.id = picked.id
    RETURNING task.*
)
SELECT
{task_columns}
FROM claimed
ORDER BY notify_due_at, id
