-- Inserts a whole row; parameter n is the n-th column below.
INSERT INTO tasks (
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
    cancel_lease_expires_at, cancel_claims, cancel_failures, cancel_last_error, launched_at,
    notify_settled_at, notify_unavailable_since, notify_outages, cancel_unavailable_since,
    cancel_outages
) VALUES (
    $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18,
    $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31, $32, $33, $34,
    $35, $36, $37, $38, $39, $40, $41, $42, $43, $44, $45, $46, $47, $48, $49, $50,
    $51, $52, $53, $54, $55, $56, $57, $58
)
