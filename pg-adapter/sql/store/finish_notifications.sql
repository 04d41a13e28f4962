-- Finishes notification steps (guard::notify_write, then outbox::apply_action) and releases the
-- notification lease. One statement for the batch; one outcome row per write, in batch order:
-- the refusal, or the outbox after the write.
-- $1 ids, $2 lease owners, $3 lease tokens, $4 dispatch versions (the frozen snapshot's),
-- $5 actions ('launched', 'busy', 'thread_gone', 'launch_failed', 'launch_unavailable',
-- 'run_succeeded', 'run_failed', 'run_outlived', 'run_pending', 'lookup_unavailable',
-- 'budget_exhausted'; a run that outlived max_run_life is a failed run whose id is kept),
-- $6 launched run ids, $7 errors (bounded), $8 now (the lease must be unexpired then),
-- $9 now + run_check_interval, $10 due times now + retry_delay(n) for n = 0..=17 (indexed by
-- the failure count, capped), $11 due times now + unavailable_delay(n) for n = 0..=17 (indexed
-- by the unanswered calls in a row, capped), $12 now - max_unavailable (an unavailability
-- episode that began at or before it has lasted too long).
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
-- Each write with its refusal, in the order of the core guard, and whether it waits out an
-- unanswered launcher (outbox::wait_out) or ends a too long outage.
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
        batch.action IN ('launch_unavailable', 'lookup_unavailable')
            AND COALESCE(locked.notify_unavailable_since <= $12, false) AS outage_over,
        batch.action IN ('launch_unavailable', 'lookup_unavailable')
            AND NOT COALESCE(locked.notify_unavailable_since <= $12, false) AS waits_out,
        locked.notified_version AS locked_notified, locked.dispatch_version AS locked_dispatch,
        locked.event_version AS locked_event_version, locked.event IS NULL AS locked_no_event
    FROM batch LEFT JOIN locked ON locked.id = batch.id
),
-- What apply_action does to the locked row.
judged AS (
    SELECT checked.*,
        -- the frozen snapshot's dispatch is over (delivered or dead)
        checked.action IN ('thread_gone', 'run_succeeded', 'budget_exhausted')
            OR checked.outage_over AS dispatch_ended,
        -- the version settled by that end
        GREATEST(checked.locked_notified, checked.locked_dispatch) AS settled_version,
        -- ... and a newer version with an event waits: the channel reopens for it
        (checked.action IN ('thread_gone', 'run_succeeded', 'budget_exhausted')
                OR checked.outage_over)
            AND GREATEST(checked.locked_notified, checked.locked_dispatch)
                < checked.locked_event_version
            AND NOT checked.locked_no_event AS channel_reopened,
        -- a launch to retry while the latest event is gone: nothing is left to send
        (checked.action IN ('busy', 'launch_failed')
                OR (checked.action = 'launch_unavailable' AND checked.waits_out))
            AND checked.locked_no_event AS event_gone,
        -- a counted failure
        checked.action IN ('launch_failed', 'run_failed', 'run_outlived') AS counts_failure
    FROM checked
),
updated AS (
    UPDATE tasks AS task SET
        notify_lease_owner = NULL,
        notify_lease_token = NULL,
        notify_lease_expires_at = NULL,
        notify_status = CASE
            WHEN checked.action = 'launched' THEN 'dispatched'
            WHEN checked.action IN ('busy', 'launch_failed')
              OR (checked.action = 'launch_unavailable' AND checked.waits_out) THEN
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
            WHEN checked.waits_out THEN ($11::bigint[])[LEAST(task.notify_outages + 1, 17) + 1]
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
            WHEN checked.channel_reopened THEN NULL
            WHEN checked.counts_failure OR checked.action IN ('launch_unavailable', 'lookup_unavailable')
            THEN checked.error
            ELSE task.notify_last_error END,
        notify_unavailable_since = CASE
            WHEN checked.waits_out THEN COALESCE(task.notify_unavailable_since, $8)
            ELSE NULL END,
        notify_outages = CASE
            WHEN checked.waits_out THEN LEAST(task.notify_outages + 1, 4294967295)
            ELSE 0 END,
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
            WHEN checked.action IN ('thread_gone', 'budget_exhausted') OR checked.outage_over
            THEN task.dispatch_version
            ELSE task.dead_letter_version END,
        dead_letter_reason = CASE
            WHEN checked.action = 'thread_gone' THEN 'thread_gone'
            WHEN checked.action = 'budget_exhausted' THEN 'budget'
            WHEN checked.outage_over THEN 'unavailable'
            ELSE task.dead_letter_reason END
    FROM judged AS checked
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
