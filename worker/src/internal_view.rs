//! `tasklatch tasks show --internal`: one task's operational state, for an operator — where
//! each loop stands with it (poll, notification, cancel, answer), its errors, its next times,
//! its attempts and who holds its leases.
//!
//! Never a secret: no remote task id or session, no answer text, no header or token. Error
//! texts are the stored ones (the remote id was taken out when they were stored, and they are
//! bounded); they come from remote servers, so JSON escaping is what keeps a terminal safe.

use crate::api::shapes::rfc3339;
use serde::Serialize;
use tasklatch_core::lease::Lease;
use tasklatch_core::task::TaskRow;
use tasklatch_core::time::Timestamp;

/// A task's operational state (see the module documentation).
#[derive(Serialize)]
pub struct InternalView {
    task_id: String,
    owner: String,
    thread: String,
    /// The MCP server's configured id.
    server: String,
    name: String,
    created_at: String,
    remote: RemoteView,
    poll: PollView,
    notification: NotifyView,
    cancel: CancelView,
    answer: AnswerView,
}

#[derive(Serialize)]
struct RemoteView {
    status: &'static str,
    updated_at: String,
    observed_at: Option<String>,
    error: Option<String>,
}

#[derive(Serialize)]
struct PollView {
    next_poll_at: Option<String>,
    consecutive_errors: u32,
    last_error_class: Option<&'static str>,
    last_error: Option<String>,
    claims: u64,
    lease: Option<LeaseView>,
}

#[derive(Serialize)]
struct NotifyView {
    status: &'static str,
    event_version: u64,
    notified_version: u64,
    dispatch_version: u64,
    dispatch_attempt: u32,
    due_at: String,
    failures: u32,
    busy_answers: u32,
    outages: u32,
    unavailable_since: Option<String>,
    last_error: Option<String>,
    dead_letter: Option<DeadLetterView>,
    /// The Agent Server's run of the current attempt.
    run_id: Option<String>,
    launched_at: Option<String>,
    claims: u64,
    lease: Option<LeaseView>,
}

#[derive(Serialize)]
struct DeadLetterView {
    version: u64,
    reason: &'static str,
}

#[derive(Serialize)]
struct CancelView {
    status: &'static str,
    requested_at: Option<String>,
    due_at: Option<String>,
    failures: u32,
    outages: u32,
    unavailable_since: Option<String>,
    last_error: Option<String>,
    claims: u64,
    lease: Option<LeaseView>,
}

#[derive(Serialize)]
struct AnswerView {
    status: &'static str,
    request_id: Option<String>,
    recorded_at: Option<String>,
    error: Option<String>,
    /// Questions of the current input request answered so far.
    answered: usize,
}

/// Who holds a lease, with its fencing token and expiry.
#[derive(Serialize)]
struct LeaseView {
    holder: String,
    token: u64,
    expires_at: String,
}

fn time(t: Option<Timestamp>) -> Option<String> {
    t.map(rfc3339)
}

fn lease(l: &Option<Lease>) -> Option<LeaseView> {
    l.as_ref().map(|l| LeaseView {
        holder: l.owner.to_string(),
        token: l.token.0,
        expires_at: rfc3339(l.expires_at),
    })
}

impl InternalView {
    /// The view of `row`.
    pub fn of(row: &TaskRow) -> InternalView {
        let id = &row.identity;
        InternalView {
            task_id: id.task_id.to_string(),
            owner: id.owner.to_string(),
            thread: id.thread.to_string(),
            server: id.server.to_string(),
            name: id.name.clone(),
            created_at: rfc3339(id.created_at),
            remote: RemoteView {
                status: row.remote.status.as_str(),
                updated_at: rfc3339(row.remote.updated_at),
                observed_at: time(row.remote.observed_at),
                error: row.remote.error.clone(),
            },
            poll: PollView {
                next_poll_at: time(row.poll.next_poll_at),
                consecutive_errors: row.poll.consecutive_errors,
                last_error_class: row.poll.last_error.as_ref().map(|e| e.class.as_str()),
                last_error: row.poll.last_error.as_ref().map(|e| e.message.clone()),
                claims: row.poll.claims,
                lease: lease(&row.poll.lease),
            },
            notification: notify_view(row),
            cancel: CancelView {
                status: row.cancel.status.as_str(),
                requested_at: time(row.cancel.requested_at),
                due_at: time(row.cancel.due_at),
                failures: row.cancel.failures,
                outages: row.cancel.outages,
                unavailable_since: time(row.cancel.unavailable_since),
                last_error: row.cancel.last_error.clone(),
                claims: row.cancel.claims,
                lease: lease(&row.cancel.lease),
            },
            answer: AnswerView {
                status: row.answer.status.as_str(),
                request_id: row.answer.request_id.clone(),
                recorded_at: time(row.answer.recorded_at),
                error: row.answer.error.clone(),
                answered: row.answer.answered.len(),
            },
        }
    }

    /// Pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|_| "{}".into())
    }
}

fn notify_view(row: &TaskRow) -> NotifyView {
    let o = &row.outbox;
    NotifyView {
        status: o.status.as_str(),
        event_version: o.event_version,
        notified_version: o.notified_version,
        dispatch_version: o.dispatch_version,
        dispatch_attempt: o.dispatch_attempt,
        due_at: rfc3339(o.due_at),
        failures: o.failures,
        busy_answers: o.busy_count,
        outages: o.outages,
        unavailable_since: time(o.unavailable_since),
        last_error: o.last_error.clone(),
        dead_letter: o.dead_letter.map(|(version, reason)| DeadLetterView {
            version,
            reason: reason.as_str(),
        }),
        run_id: o.run_id.as_ref().map(ToString::to_string),
        launched_at: time(o.launched_at),
        claims: o.claims,
        lease: lease(&o.lease),
    }
}
