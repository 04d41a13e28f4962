-- Releases leases of one loop (guard::release, then the loop's release): the lease is cleared
-- and the work is due again at retry_at, as the loop's rescheduling below says. The phase is
-- unchanged. One statement for the batch; one outcome row per release, in batch order: the
-- refusal, or the outbox after the write. Written once for the three loops: sql.rs fills in the
-- loop (poll, notify, cancel: the prefix of its columns) and its rescheduling
-- (release_reschedule_poll.sql, release_reschedule_counted.sql) at compile time.
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
            WHEN locked.{loop}_lease_owner IS NULL
              OR locked.{loop}_lease_owner <> batch.lease_owner
              OR locked.{loop}_lease_token <> batch.lease_token  -- guard: lease_token
            THEN 'lease_not_held'
            WHEN locked.{loop}_lease_expires_at <= $6 THEN 'lease_expired'  -- guard: lease_expiry
            ELSE NULL
        END AS refusal
    FROM batch LEFT JOIN locked ON locked.id = batch.id
),
updated AS (
    UPDATE tasks AS task SET
        {loop}_lease_owner = NULL,
        {loop}_lease_token = NULL,
        {loop}_lease_expires_at = NULL,
{reschedule}
    FROM checked
    WHERE task.id = checked.id
      AND checked.refusal IS NULL
      -- the lease guard again, on the row being updated
      AND task.{loop}_lease_owner = checked.lease_owner
      AND task.{loop}_lease_token = checked.lease_token  -- guard: lease_token
      AND task.{loop}_lease_expires_at > $6  -- guard: lease_expiry
    RETURNING checked.ord, task.event_version, task.notified_version, task.notify_status,
        task.fingerprint, NULL::text AS recorded
)
SELECT checked.ord, checked.refusal, updated.ord IS NOT NULL AS written,
    updated.event_version, updated.notified_version, updated.notify_status,
    updated.fingerprint, updated.recorded
FROM checked LEFT JOIN updated ON updated.ord = checked.ord
ORDER BY checked.ord
