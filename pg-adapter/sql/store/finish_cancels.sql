-- Finishes cancel steps (guard::cancel_write, then cancel::apply) and releases the cancel lease.
-- A 'finished' step applies the terminal snapshot the remote cancel returned, an 'acknowledged'
-- step the non-terminal report of a cancel the server only acknowledged; either records its
-- event, only if the task is not terminal yet. The steps that end the cancel work ('finished',
-- 'acknowledged', 'budget') also clear the poll lease: polling resumes (the poll claim skips only
-- cancel_status = 'requested'), and a poll claimed before this write is refused as not held.
-- One statement for the batch; one outcome row per write, in batch order: the refusal, or the
-- outbox after the write.
-- An 'unavailable' step (the server did not answer) counts no failure: it keeps the episode's
-- start, adds an outage and is due after the unavailability backoff -- or, once the episode has
-- lasted max_unavailable, dead-letters the cancel work and keeps the start (its reason).
-- $1 ids, $2 lease owners, $3 lease tokens, $4 actions ('finished', 'acknowledged', 'failed',
-- 'unavailable', 'budget'), $5..$18 the snapshot of a 'finished' or 'acknowledged' step as in apply_polls.sql (remote status, result,
-- result truncated, artifact, error, input request, updated_at, observed_at, next poll,
-- consecutive errors, error class, error message, event JSON, its fingerprint), $19 cancel
-- errors (bounded), $20 now (the lease must be unexpired then), $21 due times
-- now + retry_delay(n) for n = 0..=17 (indexed by the failure count, capped), $22 due times
-- now + unavailable_delay(n) for n = 0..=17 (indexed by the outages in a row, capped), $23
-- now - max_unavailable (an episode that began then or earlier has lasted too long).
WITH batch AS (
    SELECT * FROM unnest(
        $1::text[], $2::text[], $3::bigint[], $4::text[], $5::text[], $6::text[], $7::bool[],
        $8::text[], $9::text[], $10::text[], $11::bigint[], $12::bigint[], $13::bigint[],
        $14::bigint[], $15::text[], $16::text[], $17::text[], $18::text[], $19::text[]
    ) WITH ORDINALITY AS batch(
        id, lease_owner, lease_token, action, remote_status, remote_result,
        remote_result_truncated, remote_artifact, remote_error, remote_input_request,
        remote_updated_at, remote_observed_at, next_poll_at, consecutive_errors,
        error_class, error_message, new_event, new_fingerprint, cancel_error, ord
    )
),
-- The batch's rows, locked in id order (concurrent batches cannot deadlock).
locked AS MATERIALIZED (
    SELECT * FROM tasks WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE
),
-- Each write with its refusal, in the order of the core guard, whether its snapshot applies, and
-- what record_event does to the locked row when it does.
checked AS (
    SELECT batch.*,
        CASE
            WHEN locked.id IS NULL THEN 'no_such_task'
            WHEN locked.cancel_lease_owner IS NULL
              OR locked.cancel_lease_owner <> batch.lease_owner
              OR locked.cancel_lease_token <> batch.lease_token  -- guard: lease_token
            THEN 'lease_not_held'
            WHEN locked.cancel_lease_expires_at <= $20 THEN 'lease_expired'  -- guard: lease_expiry
            ELSE NULL
        END AS refusal,
        -- a finished or acknowledged cancel of a task that is not terminal yet: its snapshot applies
        (batch.action IN ('finished', 'acknowledged')
            AND locked.remote_status NOT IN ('completed', 'failed', 'cancelled'))
            AS snapshot_applies,
        -- no event any more: the fingerprint is retired
        (batch.action IN ('finished', 'acknowledged')
            AND locked.remote_status NOT IN ('completed', 'failed', 'cancelled'))
            AND batch.new_fingerprint IS NULL AS event_cleared,
        -- a new fingerprint: a new version
        (batch.action IN ('finished', 'acknowledged')
            AND locked.remote_status NOT IN ('completed', 'failed', 'cancelled'))
            AND batch.new_fingerprint IS NOT NULL
            AND locked.fingerprint IS DISTINCT FROM batch.new_fingerprint AS event_changed,
        -- cleared while undelivered work waits and nothing is in flight: settle it, unsent
        (batch.action IN ('finished', 'acknowledged')
            AND locked.remote_status NOT IN ('completed', 'failed', 'cancelled'))
            AND batch.new_fingerprint IS NULL
            AND locked.notify_status NOT IN ('claimed', 'dispatched', 'retry')
            AND locked.event_version > locked.notified_version AS undelivered_dropped,
        -- a new version while nothing is in flight: the channel (re)opens
        (batch.action IN ('finished', 'acknowledged')
            AND locked.remote_status NOT IN ('completed', 'failed', 'cancelled'))
            AND batch.new_fingerprint IS NOT NULL
            AND locked.fingerprint IS DISTINCT FROM batch.new_fingerprint
            AND locked.notify_status NOT IN ('claimed', 'dispatched', 'retry') AS channel_reopened,
        -- cancel::wait_out: an unanswered cancel whose episode has lasted too long ends the work
        batch.action = 'unavailable'
            AND COALESCE(locked.cancel_unavailable_since <= $23, false) AS outage_over
    FROM batch LEFT JOIN locked ON locked.id = batch.id
),
updated AS (
    UPDATE tasks AS task SET
        -- cancel::apply: the cancel work
        cancel_lease_owner = NULL,
        cancel_lease_token = NULL,
        cancel_lease_expires_at = NULL,
        cancel_status = CASE checked.action
            WHEN 'finished' THEN 'done'
            WHEN 'acknowledged' THEN 'done'
            WHEN 'budget' THEN 'dead_letter'
            WHEN 'unavailable' THEN
                CASE WHEN checked.outage_over THEN 'dead_letter' ELSE task.cancel_status END
            ELSE task.cancel_status END,
        cancel_due_at = CASE checked.action
            WHEN 'finished' THEN NULL
            WHEN 'acknowledged' THEN NULL
            WHEN 'budget' THEN NULL
            WHEN 'failed' THEN ($21::bigint[])[LEAST(task.cancel_failures + 1, 17) + 1]
            WHEN 'unavailable' THEN
                CASE WHEN checked.outage_over THEN NULL
                ELSE ($22::bigint[])[LEAST(task.cancel_outages + 1, 17) + 1] END
            ELSE task.cancel_due_at END,
        cancel_failures = CASE
            WHEN checked.action = 'failed' THEN task.cancel_failures + 1
            ELSE task.cancel_failures END,
        cancel_last_error = CASE
            WHEN checked.action IN ('failed', 'unavailable') THEN checked.cancel_error
            ELSE task.cancel_last_error END,
        -- cancel::answered resets the episode; wait_out starts or continues it
        cancel_unavailable_since = CASE
            WHEN checked.action = 'unavailable' THEN COALESCE(task.cancel_unavailable_since, $20)
            ELSE NULL END,
        cancel_outages = CASE
            WHEN checked.action = 'unavailable' AND NOT checked.outage_over
                THEN LEAST(task.cancel_outages + 1, 4294967295)
            ELSE 0 END,
        -- the cancel work ended: the poll lease is cleared (a poll claimed before is fenced)
        poll_lease_owner = CASE
            WHEN checked.action IN ('failed', 'unavailable') AND NOT checked.outage_over
            THEN task.poll_lease_owner ELSE NULL END,
        poll_lease_token = CASE
            WHEN checked.action IN ('failed', 'unavailable') AND NOT checked.outage_over
            THEN task.poll_lease_token ELSE NULL END,
        poll_lease_expires_at = CASE
            WHEN checked.action IN ('failed', 'unavailable') AND NOT checked.outage_over
            THEN task.poll_lease_expires_at ELSE NULL END,
        -- the terminal snapshot, when it applies
        remote_status = CASE
            WHEN checked.snapshot_applies THEN checked.remote_status
            ELSE task.remote_status END,
        remote_result = CASE
            WHEN checked.snapshot_applies THEN checked.remote_result
            ELSE task.remote_result END,
        remote_result_truncated = CASE
            WHEN checked.snapshot_applies THEN checked.remote_result_truncated
            ELSE task.remote_result_truncated END,
        remote_artifact = CASE
            WHEN checked.snapshot_applies THEN checked.remote_artifact
            ELSE task.remote_artifact END,
        remote_error = CASE
            WHEN checked.snapshot_applies THEN checked.remote_error
            ELSE task.remote_error END,
        remote_input_request = CASE
            WHEN checked.snapshot_applies THEN checked.remote_input_request
            ELSE task.remote_input_request END,
        remote_updated_at = CASE
            WHEN checked.snapshot_applies THEN checked.remote_updated_at
            ELSE task.remote_updated_at END,
        remote_observed_at = CASE
            WHEN checked.snapshot_applies THEN checked.remote_observed_at
            ELSE task.remote_observed_at END,
        -- ... and the next poll is due no earlier than that lease's expiry (its holder may
        -- still be calling the server): never two remote polls at once
        poll_next_at = CASE
            WHEN checked.action IN ('failed', 'unavailable') AND NOT checked.outage_over
                THEN task.poll_next_at
            WHEN checked.snapshot_applies AND checked.next_poll_at IS NULL THEN NULL
            WHEN checked.snapshot_applies
                THEN GREATEST(checked.next_poll_at, task.poll_lease_expires_at)
            WHEN task.poll_next_at IS NULL THEN NULL
            ELSE GREATEST(task.poll_next_at, task.poll_lease_expires_at) END,
        poll_consecutive_errors = CASE
            WHEN checked.snapshot_applies THEN checked.consecutive_errors
            ELSE task.poll_consecutive_errors END,
        poll_error_class = CASE
            WHEN checked.snapshot_applies THEN checked.error_class
            ELSE task.poll_error_class END,
        poll_error_message = CASE
            WHEN checked.snapshot_applies THEN checked.error_message
            ELSE task.poll_error_message END,
        -- outbox::record_event, when the snapshot applies (the flags are false otherwise)
        event_version = CASE
            WHEN checked.event_changed THEN task.event_version + 1
            ELSE task.event_version END,
        fingerprint = CASE
            WHEN checked.event_cleared THEN NULL
            WHEN checked.event_changed THEN checked.new_fingerprint
            ELSE task.fingerprint END,
        event = CASE
            WHEN checked.event_cleared THEN NULL
            WHEN checked.event_changed THEN checked.new_event
            ELSE task.event END,
        notified_version = CASE
            WHEN checked.undelivered_dropped THEN task.event_version
            ELSE task.notified_version END,
        dispatch_event = CASE
            WHEN checked.undelivered_dropped OR checked.channel_reopened THEN NULL
            ELSE task.dispatch_event END,
        run_id = CASE
            WHEN checked.undelivered_dropped OR checked.channel_reopened THEN NULL
            ELSE task.run_id END,
        notify_status = CASE
            WHEN checked.channel_reopened THEN 'pending'
            WHEN checked.undelivered_dropped AND task.notify_status = 'pending' THEN 'none'
            ELSE task.notify_status END,
        notify_due_at = CASE WHEN checked.channel_reopened THEN $20 ELSE task.notify_due_at END,
        dispatch_attempt = CASE
            WHEN checked.channel_reopened THEN 0
            ELSE task.dispatch_attempt END,
        notify_failures = CASE
            WHEN checked.channel_reopened THEN 0
            ELSE task.notify_failures END,
        notify_last_error = CASE
            WHEN checked.channel_reopened THEN NULL
            ELSE task.notify_last_error END
    FROM checked
    WHERE task.id = checked.id
      AND checked.refusal IS NULL
      -- the guard again, on the row being updated
      AND task.cancel_lease_owner = checked.lease_owner
      AND task.cancel_lease_token = checked.lease_token  -- guard: lease_token
      AND task.cancel_lease_expires_at > $20  -- guard: lease_expiry
    RETURNING checked.ord, task.event_version, task.notified_version, task.notify_status,
        task.fingerprint,
        CASE WHEN NOT checked.snapshot_applies THEN NULL ELSE
            CASE
                WHEN checked.event_cleared THEN 'cleared'
                WHEN checked.event_changed THEN 'new'
                ELSE 'unchanged'
            END
        END AS recorded
)
SELECT checked.ord, checked.refusal, updated.ord IS NOT NULL AS written,
    updated.event_version, updated.notified_version, updated.notify_status,
    updated.fingerprint, updated.recorded
FROM checked LEFT JOIN updated ON updated.ord = checked.ord
ORDER BY checked.ord
