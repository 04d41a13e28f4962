-- Finishes notification steps (guard::notify_write, then outbox::apply_action) and releases the
-- notification lease. One statement for the batch; one outcome row per write, in batch order:
-- the refusal, or the outbox after the write.
-- $1 ids, $2 lease owners, $3 lease tokens, $4 dispatch versions (the frozen snapshot's),
-- $5 actions ('launched', 'busy', 'thread_gone', 'launch_failed', 'run_succeeded',
-- 'run_failed', 'run_outlived', 'run_pending', 'lookup_failed', 'budget_exhausted'; a run that
-- outlived max_run_life is a failed run whose id is kept), $6 launched run ids,
-- $7 errors (bounded), $8 now (the lease must be unexpired then), $9 now + run_check_interval,
-- $10 due times now + retry_delay(n) for n = 0..=17 (indexed by the failure count, capped).
WITH batch AS (
    SELECT * FROM unnest(
        $1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::text[], $6::text[], $7::text[]
    ) WITH ORDINALITY AS batch(
        id, lease_owner, lease_token, dispatch_version, action, launched_run, error, ord
    )
),
-- The batch's rows, locked in id order (concurrent batches cannot deadlock).
locked AS MATERIALIZED (
    SELECT * FROM tasks WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE
),
-- Each write with its refusal, in the order of the core guard, and what apply_action does to
-- the locked row.
checked AS (
    SELECT batch.*,
        CASE
            WHEN locked.id IS NULL THEN 'no_such_task'
            WHEN locked.notify_lease_owner IS NULL
              OR locked.notify_lease_owner <> batch.lease_owner
              OR locked.notify_lease_token <> batch.lease_token  -- guard: lease_token
            THEN 'lease_not_held'
            WHEN locked.notify_lease_expires_at <= $8 THEN 'lease_expired'  -- guard: lease_expiry
            WHEN locked.dispatch_version <> batch.dispatch_version THEN 'version_moved'
            ELSE NULL
        END AS refusal,
        -- the frozen snapshot's dispatch is over (delivered or dead)
        batch.action IN ('thread_gone', 'run_succeeded', 'budget_exhausted') AS dispatch_ended,
        -- the version settled by that end
        GREATEST(locked.notified_version, locked.dispatch_version) AS settled_version,
        -- ... and a newer version with an event waits: the channel reopens for it
        batch.action IN ('thread_gone', 'run_succeeded', 'budget_exhausted')
            AND GREATEST(locked.notified_version, locked.dispatch_version) < locked.event_version
            AND locked.event IS NOT NULL AS channel_reopened,
        -- a launch to retry while the latest event is gone: nothing is left to send
        batch.action IN ('busy', 'launch_failed') AND locked.event IS NULL AS event_gone,
        -- a counted failure
        batch.action IN ('launch_failed', 'run_failed', 'run_outlived', 'lookup_failed')
            AS counts_failure
    FROM batch LEFT JOIN locked ON locked.id = batch.id
),
updated AS (
    UPDATE tasks AS task SET
        notify_lease_owner = NULL,
        notify_lease_token = NULL,
        notify_lease_expires_at = NULL,
        notify_status = CASE
            WHEN checked.action = 'launched' THEN 'dispatched'
            WHEN checked.action IN ('busy', 'launch_failed') THEN
                CASE WHEN checked.event_gone THEN 'none' ELSE 'pending' END
            WHEN checked.action IN ('run_failed', 'run_outlived') THEN 'retry'
            WHEN checked.channel_reopened THEN 'pending'
            WHEN checked.action = 'run_succeeded' THEN 'delivered'
            WHEN checked.dispatch_ended THEN 'dead_letter'
            ELSE task.notify_status END,
        run_id = CASE
            WHEN checked.action = 'launched' THEN checked.launched_run
            WHEN checked.event_gone OR checked.action = 'run_failed' OR checked.dispatch_ended
            THEN NULL
            ELSE task.run_id END,
        launched_at = CASE
            WHEN checked.action = 'launched' THEN $8
            ELSE task.launched_at END,
        notify_due_at = CASE
            WHEN checked.action IN ('launched', 'busy', 'run_pending') THEN $9
            WHEN checked.counts_failure THEN ($10::bigint[])[LEAST(task.notify_failures + 1, 17) + 1]
            WHEN checked.channel_reopened THEN $8
            ELSE task.notify_due_at END,
        notify_failures = CASE
            WHEN checked.counts_failure THEN task.notify_failures + 1
            WHEN checked.channel_reopened THEN 0
            ELSE task.notify_failures END,
        dispatch_attempt = CASE
            WHEN checked.action IN ('run_failed', 'run_outlived') THEN task.dispatch_attempt + 1
            WHEN checked.channel_reopened THEN 0
            ELSE task.dispatch_attempt END,
        notify_last_error = CASE
            WHEN checked.counts_failure THEN checked.error
            WHEN checked.channel_reopened THEN NULL
            ELSE task.notify_last_error END,
        dispatch_event = CASE
            WHEN checked.action = 'busy' OR checked.dispatch_ended OR checked.event_gone THEN NULL
            ELSE task.dispatch_event END,
        notified_version = CASE
            WHEN checked.event_gone THEN task.event_version
            WHEN checked.dispatch_ended THEN
                CASE WHEN checked.channel_reopened THEN checked.settled_version
                ELSE task.event_version END
            ELSE task.notified_version END,
        busy_count = CASE
            WHEN checked.action = 'busy' THEN LEAST(task.busy_count + 1, 4294967295)
            ELSE task.busy_count END,
        notify_settled_at = CASE
            WHEN checked.dispatch_ended AND NOT checked.channel_reopened THEN $8
            ELSE task.notify_settled_at END,
        dead_letter_version = CASE
            WHEN checked.action IN ('thread_gone', 'budget_exhausted') THEN task.dispatch_version
            ELSE task.dead_letter_version END,
        dead_letter_reason = CASE
            WHEN checked.action = 'thread_gone' THEN 'thread_gone'
            WHEN checked.action = 'budget_exhausted' THEN 'budget'
            ELSE task.dead_letter_reason END
    FROM checked
    WHERE task.id = checked.id
      AND checked.refusal IS NULL
      -- the guard again, on the row being updated
      AND task.notify_lease_owner = checked.lease_owner
      AND task.notify_lease_token = checked.lease_token  -- guard: lease_token
      AND task.notify_lease_expires_at > $8  -- guard: lease_expiry
      AND task.dispatch_version = checked.dispatch_version
    RETURNING checked.ord, task.event_version, task.notified_version, task.notify_status,
        task.fingerprint, NULL::text AS recorded
)
SELECT checked.ord, checked.refusal, updated.ord IS NOT NULL AS written,
    updated.event_version, updated.notified_version, updated.notify_status,
    updated.fingerprint, updated.recorded
FROM checked LEFT JOIN updated ON updated.ord = checked.ord
ORDER BY checked.ord
