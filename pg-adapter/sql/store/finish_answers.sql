-- Finishes answer attempts (guard::answer_write, then transitions::answer::apply) under the poll
-- lease whose claim marked the attempt; the poll lease stays held. One statement for the batch;
-- one outcome row per write, in batch order: the refusal, or the outbox after the write (which
-- an answer never changes).
-- $1 ids, $2 lease owners, $3 lease tokens, $4 actions ('sent', 'unconfirmed', 'failed',
-- 'not_sent'), $5 errors (bounded; for 'unconfirmed' and 'failed'), $6 now (the lease must be
-- unexpired then).
WITH batch AS (
    SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::text[])
        WITH ORDINALITY AS batch(id, lease_owner, lease_token, action, answer_error, ord)
),
-- The batch's rows, locked in id order (concurrent batches cannot deadlock).
locked AS MATERIALIZED (
    SELECT * FROM tasks WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE
),
-- Each write with its refusal, in the order of the core guard.
checked AS (
    SELECT batch.*,
        CASE
            WHEN locked.id IS NULL THEN 'no_such_task'
            WHEN locked.poll_lease_owner IS NULL
              OR locked.poll_lease_owner <> batch.lease_owner
              OR locked.poll_lease_token <> batch.lease_token  -- guard: lease_token
            THEN 'lease_not_held'
            WHEN locked.poll_lease_expires_at <= $6 THEN 'lease_expired'  -- guard: lease_expiry
            -- not this claim's attempt (none, another claim's, or already finished)
            WHEN locked.answer_status <> 'sending'
              OR locked.answer_attempt_token IS DISTINCT FROM batch.lease_token
            THEN 'lease_not_held'
            ELSE NULL
        END AS refusal
    FROM batch LEFT JOIN locked ON locked.id = batch.id
),
updated AS (
    UPDATE tasks AS task SET
        answer_status = CASE checked.action
            WHEN 'sent' THEN 'sent'
            WHEN 'unconfirmed' THEN 'unconfirmed'
            WHEN 'failed' THEN 'failed'
            ELSE 'pending' END,
        answer_text = CASE
            WHEN checked.action = 'not_sent' THEN task.answer_text
            ELSE NULL END,
        answer_error = CASE
            WHEN checked.action IN ('unconfirmed', 'failed') THEN checked.answer_error
            ELSE task.answer_error END,
        answer_attempt_token = CASE
            WHEN checked.action = 'not_sent' THEN NULL
            ELSE task.answer_attempt_token END
    FROM checked
    WHERE task.id = checked.id
      AND checked.refusal IS NULL
      -- the guard again, on the row being updated
      AND task.poll_lease_owner = checked.lease_owner
      AND task.poll_lease_token = checked.lease_token  -- guard: lease_token
      AND task.poll_lease_expires_at > $6  -- guard: lease_expiry
      AND task.answer_status = 'sending'
      AND task.answer_attempt_token = checked.lease_token
    RETURNING checked.ord, task.event_version, task.notified_version, task.notify_status,
        task.fingerprint, NULL::text AS recorded
)
SELECT checked.ord, checked.refusal, updated.ord IS NOT NULL AS written,
    updated.event_version, updated.notified_version, updated.notify_status,
    updated.fingerprint, updated.recorded
FROM checked LEFT JOIN updated ON updated.ord = checked.ord
ORDER BY checked.ord
