//! The first rows of a task (DOMAIN §7): the submit's intent, stored before the remote call,
//! and the handle recorded on it after the call. A task already terminal or input_required at
//! submit notifies at once: its first event opens the channel as version 1.
//!
//! An intent is a `submitted` row with an unrecorded handle ([`crate::secret::RemoteHandle::unrecorded`]),
//! nothing to say, and its first poll due only when `submit_grace` has passed since it was
//! stored. The submit records the handle on it ([`record_handle`]) or, when nothing was
//! started, withdraws it. An intent still waiting when its grace is over belongs to a submit
//! that died between the remote call and the handle write: a loop that claims it makes no
//! remote call and ends it `failed` with [`UNTRACKED`] ([`untracked`]), which is delivered to
//! the thread like any end — never silence. The handle write and that ending exclude each other
//! on the row: the first to land wins, and the handle write voids the loops' leases.

use crate::event::Event;
use crate::identity::Identity;
use crate::invariants::debug_check_row;
use crate::policy::Policy;
use crate::remote::RemoteState;
use crate::snapshot::{Observed, ProtocolError};
use crate::status::RemoteStatus;
use crate::task::{AnswerState, CancelState, Outbox, PollState, TaskRow};
use crate::time::Timestamp;
use crate::transitions::cancel;
use crate::transitions::outbox::record_event;
use crate::transitions::poll::{self, next_poll_delay, PollUpdate};

/// The error of a task whose submit never recorded its handle: the thread is told exactly this.
pub const UNTRACKED: &str =
    "the task may have started but could not be tracked: the remote task's \
id was never saved (the worker that submitted it stopped first, or the task store refused it), \
so its progress and result cannot be followed";

/// The intent row of a submit by `identity` (whose handle must be unrecorded) at `now`.
pub fn new_intent(identity: Identity, now: Timestamp, policy: &Policy) -> TaskRow {
    debug_assert!(
        identity.handle.is_unrecorded(),
        "an intent row carries no handle yet"
    );
    let mut row = new_row(identity, None, now, policy);
    row.poll.next_poll_at = Some(grace_end(&row, policy));
    debug_check_row(&row);
    row
}

/// When an intent that is still waiting for its handle is ended as untracked.
pub fn grace_end(row: &TaskRow, policy: &Policy) -> Timestamp {
    row.identity.created_at.plus(policy.submit_grace)
}

/// Whether `row` is a submit's intent still waiting for its handle.
pub fn awaits_handle(row: &TaskRow) -> bool {
    row.identity.handle.is_unrecorded() && row.remote.status == RemoteStatus::Submitted
}

/// Records on the intent `row` the handle of `started` — the row [`new_row`] builds from the
/// handle and the remote's first report — at `now`. Returns `false`, changing nothing, when the
/// row no longer waits for a handle ([`awaits_handle`]: it was ended as untracked).
///
/// The poll and cancel leases are voided, so a loop that claimed the intent cannot end it any
/// more. Without a cancel request the first report is applied and its event recorded, as at a
/// submit; with one, only the handle is kept and the cancel work is due at once (no report is
/// applied after a cancel request: the cancel's own answer tells the end).
pub fn record_handle(row: &mut TaskRow, started: &TaskRow, now: Timestamp) -> bool {
    if !awaits_handle(row) {
        return false;
    }
    row.identity.handle = started.identity.handle.clone();
    row.poll.lease = None;
    row.cancel.lease = None;
    if cancel::in_progress(row) {
        row.poll.next_poll_at = Some(now);
        row.cancel.due_at = Some(now);
    } else {
        row.remote = started.remote.clone();
        row.poll.next_poll_at = started.poll.next_poll_at;
        let event = Event::build(&row.identity, &row.remote, None).map(Event::fingerprinted);
        record_event(&mut row.outbox, event, now);
    }
    debug_check_row(row);
    true
}

/// The ending of an intent whose grace is over: `failed` with [`UNTRACKED`], as a poll result
/// completed at `at` (a terminal event follows, so the thread is told).
pub fn untracked(row: &TaskRow, at: Timestamp, policy: &Policy) -> PollUpdate {
    let observed = Observed {
        status: RemoteStatus::Failed,
        result: None,
        result_truncated: false,
        artifact: None,
        error: Some(UNTRACKED.to_owned()),
        input_request: None,
        poll_hint: None,
    };
    poll::on_report(row, Ok(observed), at, policy)
}

/// The row of a newly submitted task, given the remote's first report if it sent one.
/// Without a report the task is `submitted` and due for its first poll at once.
pub fn new_row(
    identity: Identity,
    first: Option<Result<Observed, ProtocolError>>,
    now: Timestamp,
    policy: &Policy,
) -> TaskRow {
    let submitted = RemoteState::submitted(now);
    let (remote, next_poll_at) = match first {
        None => (submitted, Some(now)),
        Some(report) => {
            let observed = report.unwrap_or_else(ProtocolError::into_observed);
            let remote = submitted.observe(&observed, now);
            let next =
                next_poll_delay(remote.status, observed.poll_hint, policy).map(|d| now.plus(d));
            (remote, next)
        }
    };
    let mut outbox = Outbox::empty(now);
    let event = Event::build(&identity, &remote, None).map(Event::fingerprinted);
    record_event(&mut outbox, event, now);
    let row = TaskRow {
        identity,
        remote,
        poll: PollState {
            next_poll_at,
            consecutive_errors: 0,
            last_error: None,
            lease: None,
            claims: 0,
        },
        outbox,
        cancel: CancelState::none(),
        answer: AnswerState::none(),
    };
    debug_check_row(&row);
    row
}

/// Checks a new row against the limits of [`crate::policy`]; both stores call it before
/// inserting (the Postgres schema enforces the same limits again).
pub fn validate(row: &TaskRow) -> Result<(), crate::store::StoreError> {
    use crate::policy::{MAX_DRIVER_DATA, MAX_ID, MAX_NAME};
    let id = &row.identity;
    let checks: [(&str, &str, usize); 7] = [
        ("task id", id.task_id.as_str(), MAX_ID),
        ("owner", id.owner.as_str(), MAX_ID),
        ("thread", id.thread.as_str(), MAX_ID),
        ("server", id.server.as_str(), MAX_ID),
        ("name", &id.name, MAX_NAME),
        ("remote task id", id.handle.remote_task_id.expose(), MAX_ID),
        (
            "driver data",
            id.handle.driver_data.expose(),
            MAX_DRIVER_DATA,
        ),
    ];
    for (field, value, max) in checks {
        if value.chars().count() > max {
            return Err(crate::store::StoreError::Invalid(format!(
                "{field} longer than {max} characters"
            )));
        }
        if value.contains('\0') {
            return Err(crate::store::StoreError::Invalid(format!(
                "{field} contains a NUL character"
            )));
        }
    }
    for (field, value) in [
        ("task id", id.task_id.as_str()),
        ("owner", id.owner.as_str()),
        ("thread", id.thread.as_str()),
        ("server", id.server.as_str()),
    ] {
        if value.is_empty() {
            return Err(crate::store::StoreError::Invalid(format!(
                "{field} is empty"
            )));
        }
    }
    if row.identity.handle.is_unrecorded() && !(awaits_handle(row) && row.outbox.event_version == 0)
    {
        return Err(crate::store::StoreError::Invalid(
            "only a submit's intent row may lack a remote task id".into(),
        ));
    }
    if row.answer != AnswerState::none() {
        return Err(crate::store::StoreError::Invalid(
            "a new task has no answer".into(),
        ));
    }
    Ok(())
}
