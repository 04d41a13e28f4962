//! The task row in SQL: decoding a row back into a [`TaskRow`], and making text storable before
//! it is bound.

use crate::error::corrupt;
use sqlx::postgres::PgRow;
use sqlx::Row;
use tasklatch_core::event::{Event, Fingerprint};
use tasklatch_core::ids::{OwnerId, RunId, ServerId, TaskId, ThreadId, WorkerId};
use tasklatch_core::lease::{Lease, LeaseToken};
use tasklatch_core::secret::{RemoteHandle, Secret};
use tasklatch_core::status::{
    AnswerStatus, CancelStatus, DeadLetterReason, NotifyStatus, RemoteStatus,
};
use tasklatch_core::store::StoreError;
use tasklatch_core::task::{
    AnswerState, CancelState, ErrorClass, Identity, Outbox, PollError, PollState, RemoteState,
    TaskRow,
};
use tasklatch_core::time::Timestamp;

/// Text made storable in a Postgres `text` column: NUL (which Postgres rejects) becomes U+FFFD,
/// which keeps the character count. A hostile payload can therefore never make a write fail.
pub fn storable(text: &str) -> String {
    if text.contains('\0') {
        text.replace('\0', "\u{FFFD}")
    } else {
        text.to_owned()
    }
}

/// [`storable`] over an optional text.
pub fn storable_opt(text: Option<&str>) -> Option<String> {
    text.map(storable)
}

/// An event as stored: its text fields made storable, then its canonical JSON.
pub fn event_json(event: &Event) -> String {
    let clean = |s: &Option<String>| s.as_deref().map(storable);
    let stored = Event {
        task_id: TaskId(storable(event.task_id.as_str())),
        name: storable(&event.name),
        status: event.status,
        result: clean(&event.result),
        result_truncated: event.result_truncated,
        artifact: clean(&event.artifact),
        error: clean(&event.error),
        input_request: clean(&event.input_request),
        tracking_degraded: event.tracking_degraded,
        poll_error_class: clean(&event.poll_error_class),
        poll_error: clean(&event.poll_error),
    };
    stored.canonical_json()
}

/// A `u64` as a `bigint`, saturating (no stored counter comes near the limit).
pub fn to_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

fn u64_of(v: i64, col: &str) -> Result<u64, StoreError> {
    u64::try_from(v).map_err(|_| corrupt(col))
}

fn u32_of(v: i64, col: &str) -> Result<u32, StoreError> {
    u32::try_from(v).map_err(|_| corrupt(col))
}

fn get<'r, T>(row: &'r PgRow, col: &str) -> Result<T, StoreError>
where
    T: sqlx::Decode<'r, sqlx::Postgres> + sqlx::Type<sqlx::Postgres>,
{
    row.try_get::<T, _>(col).map_err(|_| corrupt(col))
}

fn ts(row: &PgRow, col: &str) -> Result<Timestamp, StoreError> {
    Ok(Timestamp::from_micros(get::<i64>(row, col)?))
}

fn ts_opt(row: &PgRow, col: &str) -> Result<Option<Timestamp>, StoreError> {
    Ok(get::<Option<i64>>(row, col)?.map(Timestamp::from_micros))
}

fn parse<T: std::str::FromStr>(row: &PgRow, col: &str) -> Result<T, StoreError> {
    get::<String>(row, col)?.parse().map_err(|_| corrupt(col))
}

fn event_of(row: &PgRow, col: &str) -> Result<Option<Event>, StoreError> {
    match get::<Option<String>>(row, col)? {
        None => Ok(None),
        Some(json) => serde_json::from_str(&json)
            .map(Some)
            .map_err(|_| corrupt(col)),
    }
}

fn lease_of(row: &PgRow, prefix: &str) -> Result<Option<Lease>, StoreError> {
    let owner: Option<String> = get(row, &format!("{prefix}_lease_owner"))?;
    let token: Option<i64> = get(row, &format!("{prefix}_lease_token"))?;
    let expires: Option<i64> = get(row, &format!("{prefix}_lease_expires_at"))?;
    match (owner, token, expires) {
        (Some(owner), Some(token), Some(expires)) => Ok(Some(Lease {
            owner: WorkerId(owner),
            token: LeaseToken(u64_of(token, prefix)?),
            expires_at: Timestamp::from_micros(expires),
        })),
        (None, None, None) => Ok(None),
        _ => Err(corrupt(prefix)),
    }
}

fn error_class(s: &str) -> Option<ErrorClass> {
    match s {
        "timeout" => Some(ErrorClass::Timeout),
        "connection" => Some(ErrorClass::Connection),
        "server" => Some(ErrorClass::Server),
        "rate_limited" => Some(ErrorClass::RateLimited),
        "malformed" => Some(ErrorClass::Malformed),
        _ => None,
    }
}

/// Decodes a row selected with every column of `tasks` into a [`TaskRow`]. A row that breaks
/// the schema's invariants (which the CHECK constraints make impossible) is reported as
/// [`StoreError::Unavailable`] naming the column, never as a panic.
pub fn decode_task(row: &PgRow) -> Result<TaskRow, StoreError> {
    Ok(TaskRow {
        identity: identity(row)?,
        remote: remote(row)?,
        poll: poll(row)?,
        outbox: outbox(row)?,
        cancel: cancel(row)?,
        answer: answer(row)?,
    })
}

fn answer(row: &PgRow) -> Result<AnswerState, StoreError> {
    Ok(AnswerState {
        request_id: get(row, "answer_request_id")?,
        text: get::<Option<String>>(row, "answer_text")?.map(Secret::new),
        status: parse::<AnswerStatus>(row, "answer_status")?,
        recorded_at: ts_opt(row, "answer_recorded_at")?,
        attempt_token: get::<Option<i64>>(row, "answer_attempt_token")?
            .map(|t| u64_of(t, "answer_attempt_token").map(LeaseToken))
            .transpose()?,
        error: get(row, "answer_error")?,
        answered: get(row, "answer_answered_ids")?,
    })
}

fn identity(row: &PgRow) -> Result<Identity, StoreError> {
    Ok(Identity {
        task_id: TaskId(get(row, "id")?),
        owner: OwnerId(get(row, "owner")?),
        thread: ThreadId(get(row, "thread")?),
        server: ServerId(get(row, "server")?),
        name: get(row, "name")?,
        handle: RemoteHandle {
            remote_task_id: Secret::new(get::<String>(row, "remote_task_id")?),
            driver_data: Secret::new(get::<String>(row, "driver_data")?),
        },
        created_at: ts(row, "created_at")?,
    })
}

fn remote(row: &PgRow) -> Result<RemoteState, StoreError> {
    Ok(RemoteState {
        status: parse::<RemoteStatus>(row, "remote_status")?,
        result: get(row, "remote_result")?,
        result_truncated: get(row, "remote_result_truncated")?,
        artifact: get(row, "remote_artifact")?,
        error: get(row, "remote_error")?,
        input_request: get(row, "remote_input_request")?,
        updated_at: ts(row, "remote_updated_at")?,
        observed_at: ts_opt(row, "remote_observed_at")?,
    })
}

fn poll(row: &PgRow) -> Result<PollState, StoreError> {
    let last_error = match (
        get::<Option<String>>(row, "poll_error_class")?,
        get::<Option<String>>(row, "poll_error_message")?,
    ) {
        (Some(class), Some(message)) => Some(PollError {
            class: error_class(&class).ok_or_else(|| corrupt("poll_error_class"))?,
            message,
        }),
        (None, None) => None,
        _ => return Err(corrupt("poll_error_class")),
    };
    Ok(PollState {
        next_poll_at: ts_opt(row, "poll_next_at")?,
        consecutive_errors: u32_of(
            get(row, "poll_consecutive_errors")?,
            "poll_consecutive_errors",
        )?,
        last_error,
        lease: lease_of(row, "poll")?,
        claims: u64_of(get(row, "poll_claims")?, "poll_claims")?,
    })
}

fn dead_letter(row: &PgRow) -> Result<Option<(u64, DeadLetterReason)>, StoreError> {
    match (
        get::<Option<i64>>(row, "dead_letter_version")?,
        get::<Option<String>>(row, "dead_letter_reason")?,
    ) {
        (Some(v), Some(reason)) => Ok(Some((
            u64_of(v, "dead_letter_version")?,
            reason
                .parse::<DeadLetterReason>()
                .map_err(|_| corrupt("dead_letter_reason"))?,
        ))),
        (None, None) => Ok(None),
        _ => Err(corrupt("dead_letter_version")),
    }
}

fn outbox(row: &PgRow) -> Result<Outbox, StoreError> {
    Ok(Outbox {
        event_version: u64_of(get(row, "event_version")?, "event_version")?,
        notified_version: u64_of(get(row, "notified_version")?, "notified_version")?,
        fingerprint: get::<Option<String>>(row, "fingerprint")?.map(Fingerprint),
        event: event_of(row, "event")?,
        status: parse::<NotifyStatus>(row, "notify_status")?,
        due_at: ts(row, "notify_due_at")?,
        lease: lease_of(row, "notify")?,
        claims: u64_of(get(row, "notify_claims")?, "notify_claims")?,
        dispatch_version: u64_of(get(row, "dispatch_version")?, "dispatch_version")?,
        dispatch_event: event_of(row, "dispatch_event")?,
        dispatch_attempt: u32_of(get(row, "dispatch_attempt")?, "dispatch_attempt")?,
        run_id: get::<Option<String>>(row, "run_id")?.map(RunId),
        launched_at: ts_opt(row, "launched_at")?,
        settled_at: ts_opt(row, "notify_settled_at")?,
        failures: u32_of(get(row, "notify_failures")?, "notify_failures")?,
        busy_count: u32_of(get(row, "busy_count")?, "busy_count")?,
        last_error: get(row, "notify_last_error")?,
        dead_letter: dead_letter(row)?,
        unavailable_since: ts_opt(row, "notify_unavailable_since")?,
        outages: u32_of(get(row, "notify_outages")?, "notify_outages")?,
    })
}

fn cancel(row: &PgRow) -> Result<CancelState, StoreError> {
    Ok(CancelState {
        requested_at: ts_opt(row, "cancel_requested_at")?,
        status: parse::<CancelStatus>(row, "cancel_status")?,
        due_at: ts_opt(row, "cancel_due_at")?,
        lease: lease_of(row, "cancel")?,
        claims: u64_of(get(row, "cancel_claims")?, "cancel_claims")?,
        failures: u32_of(get(row, "cancel_failures")?, "cancel_failures")?,
        last_error: get(row, "cancel_last_error")?,
        unavailable_since: ts_opt(row, "cancel_unavailable_since")?,
        outages: u32_of(get(row, "cancel_outages")?, "cancel_outages")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storable_replaces_nul_and_keeps_length() {
        assert_eq!(storable("a\0b"), "a\u{FFFD}b");
        assert_eq!(storable("a\0b").chars().count(), 3);
        assert_eq!(storable("plain"), "plain");
    }
}
