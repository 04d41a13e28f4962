-- Applies poll results (guard::poll_apply, then poll::apply and outbox::record_event). One
-- statement for the batch; one outcome row per write, in batch order: the refusal, or the row
-- after the write. The event is recorded against the row's current outbox, so notification
-- columns the notify loop wrote a moment before are kept.
--
-- With a hand-off ($20 not NULL: Store::apply_polls_and_claim), a write whose new version opens
-- the channel also claims that notification (outbox::claim on the reopened outbox: a lease for
-- $20 until $21, the new version frozen, claimed) when its notification lease is free at $22:
-- one row version instead of the poll result's and the notification claim's. Those rows come
-- back with handed_off true. The lines of the hand-off end in "-- hand_off".
-- $1 ids, $2 lease owners, $3 lease tokens, $4 completed_at (the lease must be unexpired then),
-- $5 remote status, $6 result, $7 result truncated, $8 artifact, $9 error, $10 input request,
-- $11 remote updated_at, $12 observed_at, $13 next poll, $14 consecutive errors,
-- $15 error class, $16 error message, $17 event JSON (NULL: no event), $18 its fingerprint,
-- $19 now, $20 hand-off lease owner (NULL: no hand-off), $21 its lease expiry, $22 its now.
WITH batch AS (
    SELECT * FROM unnest(
        $1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::text[], $6::text[],
        $7::bool[], $8::text[], $9::text[], $10::text[], $11::bigint[], $12::bigint[],
        $13::bigint[], $14::bigint[], $15::text[], $16::text[], $17::text[], $18::text[]
    ) WITH ORDINALITY AS batch(
        id, lease_owner, lease_token, completed_at, remote_status, remote_result,
        remote_result_truncated, remote_artifact, remote_error, remote_input_request,
        remote_updated_at, remote_observed_at, next_poll_at, consecutive_errors,
        error_class, error_message, new_event, new_fingerprint, ord
    )
),
-- The batch's rows, locked in id order (concurrent batches cannot deadlock).
locked AS MATERIALIZED (
    SELECT * FROM tasks WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE
),
-- Each write with its refusal, in the order of the core guard, and what record_event does to
-- the locked row.
checked AS (
    SELECT batch.*,
        CASE
            WHEN locked.id IS NULL THEN 'no_such_task'
            WHEN locked.poll_lease_owner IS NULL
              OR locked.poll_lease_owner <> batch.lease_owner
              OR locked.poll_lease_token <> batch.lease_token  -- guard: lease_token
            THEN 'lease_not_held'
            WHEN locked.poll_lease_expires_at <= batch.completed_at THEN 'lease_expired'  -- guard: lease_expiry
            WHEN locked.cancel_status = 'requested' THEN 'cancel_requested'  -- guard: cancel_requested
            WHEN locked.remote_status IN ('completed', 'failed', 'cancelled') THEN 'terminal'
            ELSE NULL
        END AS refusal,
        -- no event any more: the fingerprint is retired
        batch.new_fingerprint IS NULL AS event_cleared,
        -- a new fingerprint: a new version
        batch.new_fingerprint IS NOT NULL
            AND locked.fingerprint IS DISTINCT FROM batch.new_fingerprint AS event_changed,
        -- cleared while undelivered work waits and nothing is in flight: settle it, unsent
        batch.new_fingerprint IS NULL
            AND locked.notify_status NOT IN ('claimed', 'dispatched', 'retry')
            AND locked.event_version > locked.notified_version AS undelivered_dropped,
        -- a new version while nothing is in flight: the channel (re)opens
        batch.new_fingerprint IS NOT NULL
            AND locked.fingerprint IS DISTINCT FROM batch.new_fingerprint
            AND locked.notify_status NOT IN ('claimed', 'dispatched', 'retry') AS channel_reopened,
        -- ... and the hand-off claims it, its notification lease being free
        $20::text IS NOT NULL
            AND batch.new_fingerprint IS NOT NULL
            AND locked.fingerprint IS DISTINCT FROM batch.new_fingerprint
            AND locked.notify_status NOT IN ('claimed', 'dispatched', 'retry')
            AND $19::bigint <= $22::bigint
            AND (locked.notify_lease_expires_at IS NULL
                 OR locked.notify_lease_expires_at <= $22::bigint) AS handed_off
    FROM batch LEFT JOIN locked ON locked.id = batch.id
),
updated AS (
    UPDATE tasks AS task SET
        -- poll::apply: the remote state, the schedule, the lease released
        remote_status = checked.remote_status,
        remote_result = checked.remote_result,
        remote_result_truncated = checked.remote_result_truncated,
        remote_artifact = checked.remote_artifact,
        remote_error = checked.remote_error,
        remote_input_request = checked.remote_input_request,
        remote_updated_at = checked.remote_updated_at,
        remote_observed_at = checked.remote_observed_at,
        poll_next_at = checked.next_poll_at,
        poll_consecutive_errors = checked.consecutive_errors,
        poll_error_class = checked.error_class,
        poll_error_message = checked.error_message,
        poll_lease_owner = NULL,
        poll_lease_token = NULL,
        poll_lease_expires_at = NULL,
        -- the hand-off's claim: outbox::claim, on the outbox record_event reopened
        notify_claims = CASE
            WHEN checked.handed_off THEN task.notify_claims + 1
            ELSE task.notify_claims END,
        notify_lease_owner = CASE
            WHEN checked.handed_off THEN $20::text
            ELSE task.notify_lease_owner END,
        notify_lease_token = CASE
            WHEN checked.handed_off THEN task.notify_claims + 1
            ELSE task.notify_lease_token END,
        notify_lease_expires_at = CASE
            WHEN checked.handed_off THEN $21::bigint
            ELSE task.notify_lease_expires_at END,
        dispatch_version = CASE
            WHEN checked.handed_off THEN task.event_version + 1
            ELSE task.dispatch_version END,
        -- outbox::record_event
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
            WHEN checked.handed_off THEN checked.new_event -- hand_off
            WHEN checked.undelivered_dropped OR checked.channel_reopened THEN NULL
            ELSE task.dispatch_event END,
        run_id = CASE
            WHEN checked.undelivered_dropped OR checked.channel_reopened THEN NULL
            ELSE task.run_id END,
        notify_status = CASE
            WHEN checked.handed_off THEN 'claimed' -- hand_off
            WHEN checked.channel_reopened THEN 'pending'
            WHEN checked.undelivered_dropped AND task.notify_status = 'pending' THEN 'none'
            ELSE task.notify_status END,
        notify_due_at = CASE WHEN checked.channel_reopened THEN $19 ELSE task.notify_due_at END,
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
      AND task.poll_lease_owner = checked.lease_owner
      AND task.poll_lease_token = checked.lease_token  -- guard: lease_token
      AND task.poll_lease_expires_at > checked.completed_at  -- guard: lease_expiry
      AND task.cancel_status <> 'requested'  -- guard: cancel_requested
      AND task.remote_status NOT IN ('completed', 'failed', 'cancelled')
    RETURNING checked.ord, checked.handed_off,
        CASE
            WHEN checked.event_cleared THEN 'cleared'
            WHEN checked.event_changed THEN 'new'
            ELSE 'unchanged'
        END AS recorded,
        task.*
)
SELECT checked.refusal, updated.ord IS NOT NULL AS written, updated.*
FROM checked LEFT JOIN updated ON updated.ord = checked.ord
ORDER BY checked.ord
