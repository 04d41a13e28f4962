-- Claims due poll work (the rows of poll_candidates.sql; rows another transaction holds locked
-- are skipped): each gets a fresh poll lease — owner $3, token = its claim counter + 1, expiry
-- $4 — and is returned whole, in (due, id) order. The claim also does transitions::answer::
-- on_poll_claim: a pending answer becomes this claim's attempt ('sending' with its token), and an
-- attempt of an earlier claim that never wrote its outcome becomes 'unconfirmed' (never re-sent).
-- $1 now, $2 limit, $3 worker, $4 lease expiry.
WITH picked AS (
    SELECT id FROM tasks
    WHERE remote_status IN ('submitted', 'working', 'input_required')
      AND cancel_status <> 'requested'
      AND poll_next_at <= $1
      AND (poll_lease_expires_at IS NULL OR poll_lease_expires_at <= $1)
    ORDER BY poll_next_at, id
    LIMIT $2
    FOR UPDATE SKIP LOCKED
),
claimed AS (
    UPDATE tasks AS task SET
        poll_claims = task.poll_claims + 1,
        poll_lease_owner = $3,
        poll_lease_token = task.poll_claims + 1,
        poll_lease_expires_at = $4,
        answer_status = CASE task.answer_status
            WHEN 'pending' THEN 'sending'
            WHEN 'sending' THEN 'unconfirmed'
            ELSE task.answer_status END,
        answer_attempt_token = CASE
            WHEN task.answer_status = 'pending' THEN task.poll_claims + 1
            ELSE task.answer_attempt_token END,
        answer_text = CASE
            WHEN task.answer_status = 'sending' THEN NULL
            ELSE task.answer_text END,
        -- core: transitions::answer::UNCONFIRMED
        answer_error = CASE
            WHEN task.answer_status = 'sending'
            THEN 'the attempt to send the answer ended without an outcome'
            ELSE task.answer_error END
    FROM picked
    WHERE task.id = picked.id
    RETURNING task.*
)
SELECT
{task_columns}
FROM claimed
ORDER BY poll_next_at, id
