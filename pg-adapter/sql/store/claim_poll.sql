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
    id, owner, thread, server, name, remote_task_id, driver_data, created_at,
    remote_status, remote_result, remote_result_truncated, remote_artifact, remote_error,
    remote_input_request, remote_updated_at, remote_observed_at,
    poll_next_at, poll_consecutive_errors, poll_error_class, poll_error_message,
    poll_lease_owner, poll_lease_token, poll_lease_expires_at, poll_claims,
    event_version, notified_version, fingerprint, event, notify_status, notify_due_at,
    notify_lease_owner, notify_lease_token, notify_lease_expires_at, notify_claims,
    dispatch_version, dispatch_event, dispatch_attempt, run_id, notify_failures, busy_count,
    notify_last_error, dead_letter_version, dead_letter_reason,
    cancel_requested_at, cancel_status, cancel_due_at, cancel_lease_owner, cancel_lease_token,
    cancel_lease_expires_at, cancel_claims, cancel_failures, cancel_last_error,
    answer_request_id, answer_text, answer_status, answer_recorded_at, answer_attempt_token,
    answer_error, launched_at, answer_answered_ids, notify_settled_at,
    notify_unavailable_since, notify_outages, cancel_unavailable_since, cancel_outages
FROM claimed
ORDER BY poll_next_at, id
