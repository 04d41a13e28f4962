-- Every column of tasks, in table order: the whole row row.rs decodes. Written once, here: the
-- statements that return whole rows have it filled in by sql.rs at compile time.
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
