-- Releases cancel leases (guard::release, then cancel::release): the lease is cleared, the
-- work is due again at retry_at, and an error counts a failure. The phase is unchanged. One
-- statement for the batch; one outcome row per release, in batch order: the refusal, or the
-- outbox after the write.
-- $1 ids, $2 lease owners, $3 lease tokens, $4 retry_at, $5 errors (bounded; NULL for an
-- uncounted release), $6 now (the lease must be unexpired then).
WITH batch AS (
    SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::text[])
        WITH ORDINALITY AS batch(id, lease_owner, lease_token, retry_at, error, ord)
),
-- The batch's rows, locked in id order (concurrent batches cannot deadlock).
locked AS MATERIALIZED (
    SELECT * FROM tasks WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE
),
-- Each release with its refusal, in the order of the core guard.
checked AS (
    SELECT batch.*,
        CASE
            WHEN locked.id IS NULL THEN 'no_such_task'
            WHEN locked.cancel_lease_owner IS NULL
              OR locked.cancel_lease_owner <> batch.lease_owner
              OR locked.cancel_lease_token <> batch.lease_token  -- guard: lease_token
            THEN 'lease_not_held'
            WHEN locked.cancel_lease_expires_at <= $6 THEN 'lease_expired'  -- guard: lease_expiry
            ELSE NULL
        END AS refusal
    FROM batch LEFT JOIN locked ON locked.id = batch.id
),
updated AS (
    UPDATE tasks AS task SET
        cancel_lease_owner = NULL,
        cancel_lease_token = NULL,
        cancel_lease_expires_at = NULL,
        cancel_due_at = checked.retry_at,
        -- an error counts a failure
        cancel_failures = CASE
            WHEN checked.error IS NOT NULL THEN task.cancel_failures + 1
            ELSE task.cancel_failures END,
        cancel_last_error = CASE
            WHEN checked.error IS NOT NULL THEN checked.error
            ELSE task.cancel_last_error END
    FROM checked
    WHERE task.id = checked.id
      AND checked.refusal IS NULL
      -- the lease guard again, on the row being updated
      AND task.cancel_lease_owner = checked.lease_owner
      AND task.cancel_lease_token = checked.lease_token  -- guard: lease_token
      AND task.cancel_lease_expires_at > $6  -- guard: lease_expiry
    RETURNING checked.ord, task.event_version, task.notified_version, task.notify_status,
        task.fingerprint, NULL::text AS recorded
)
SELECT checked.ord, checked.refusal, updated.ord IS NOT NULL AS written,
    updated.event_version, updated.notified_version, updated.notify_status,
    updated.fingerprint, updated.recorded
FROM checked LEFT JOIN updated ON updated.ord = checked.ord
ORDER BY checked.ord
