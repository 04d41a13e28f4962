-- An operator's requeue of a dead-lettered notification (transitions::outbox::requeue): the
-- latest event becomes a new version, due now, with the dispatch fields and the failure count
-- reset (a new idempotency key, a fresh budget); the recorded dead letter stays. Only a
-- dead-lettered row with an event changes (a dead-lettered row holds no notification lease).
-- The new version fires the `event` wake-up (migration 0007). Returns the new version, or the
-- row's state when it did not change (no row at all: no such task).
-- $1 id, $2 now.
WITH target AS (
    SELECT id, notify_status, event IS NOT NULL AS has_event FROM tasks
    WHERE id = $1
    FOR UPDATE
),
requeued AS (
    UPDATE tasks AS task SET
        event_version = task.event_version + 1,
        notify_status = 'pending',
        notify_due_at = $2,
        dispatch_event = NULL,
        dispatch_attempt = 0,
        run_id = NULL,
        notify_failures = 0,
        notify_last_error = NULL
    FROM target
    WHERE task.id = target.id
      AND target.notify_status = 'dead_letter'
      AND target.has_event
    RETURNING task.event_version
)
SELECT target.notify_status, target.has_event, requeued.event_version
FROM target
LEFT JOIN requeued ON true
