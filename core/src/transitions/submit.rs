//! The first row of a task (DOMAIN §7). A task already terminal or input_required at submit
//! notifies at once: its first event opens the channel as version 1.

use crate::event::Event;
use crate::identity::Identity;
use crate::invariants::debug_check_row;
use crate::policy::Policy;
use crate::remote::RemoteState;
use crate::snapshot::{Observed, ProtocolError};
use crate::task::{AnswerState, CancelState, Outbox, PollState, TaskRow};
use crate::time::Timestamp;
use crate::transitions::outbox::record_event;
use crate::transitions::poll::next_poll_delay;

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
    if row.answer != AnswerState::none() {
        return Err(crate::store::StoreError::Invalid(
            "a new task has no answer".into(),
        ));
    }
    Ok(())
}
