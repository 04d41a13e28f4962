//! What a poll result means (DOMAIN §4): the new remote state, the next poll, the error count
//! and the event to record. Computed by the worker from its claimed row; the store applies it
//! under the poll lease with [`apply`], recording the event against the *current* outbox.

use crate::event::{Event, Fingerprint};
use crate::invariants::debug_check_row;
use crate::mutation::{self, Mutant};
use crate::policy::{
    bounded, Policy, DEGRADED_AFTER, INPUT_REQUIRED_FLOOR, MAX_POLL_DELAY, MAX_STORED_ERROR,
};
use crate::remote::{PollError, RemoteState};
use crate::snapshot::{Observed, ProtocolError};
use crate::status::RemoteStatus;
use crate::task::TaskRow;
use crate::time::Timestamp;
use crate::transitions::outbox::{record_event, Recorded};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// The shortest delay before a re-poll, whatever the server's hint: a zero hint must not spin.
pub const MIN_POLL_DELAY: Duration = Duration::from_secs(1);

/// Everything a poll result changes on the row, except the outbox (recorded at apply time).
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct PollUpdate {
    /// The remote state after the result.
    pub remote: RemoteState,
    /// The next poll; `None` for terminal tasks.
    pub next_poll_at: Option<Timestamp>,
    /// Consecutive errors after the result.
    pub consecutive_errors: u32,
    /// The last error while errors are consecutive.
    pub last_error: Option<PollError>,
    /// The event of the new state with its fingerprint; `None` when nothing is worth saying.
    pub event: Option<(Event, Fingerprint)>,
}

/// The delay before the next poll after a successful report (DOMAIN §4): the server's hint or
/// the poll interval; at least 60 s for `input_required`; at most one day; none when terminal.
pub fn next_poll_delay(
    status: RemoteStatus,
    hint: Option<Duration>,
    policy: &Policy,
) -> Option<Duration> {
    if status.is_terminal() {
        return None;
    }
    let mut delay = hint.unwrap_or(policy.poll_interval).max(MIN_POLL_DELAY);
    if status == RemoteStatus::InputRequired {
        delay = delay.max(INPUT_REQUIRED_FLOOR);
    }
    Some(delay.min(MAX_POLL_DELAY))
}

/// A successful report (or a protocol error, which makes the task terminal `failed`).
pub fn on_report(
    row: &TaskRow,
    report: Result<Observed, ProtocolError>,
    at: Timestamp,
    policy: &Policy,
) -> PollUpdate {
    let observed = report.unwrap_or_else(ProtocolError::into_observed);
    let remote = row.remote.observe(&observed, at);
    let next_poll_at =
        next_poll_delay(remote.status, observed.poll_hint, policy).map(|d| at.plus(d));
    let unannounced = mutation::active(Mutant::UnrequestedCancelNotNotified)
        && remote.status == RemoteStatus::Cancelled
        && row.cancel.requested_at.is_none();
    let event = Event::build(&row.identity, &remote, None)
        .filter(|_| !unannounced)
        .map(Event::fingerprinted);
    PollUpdate {
        remote,
        next_poll_at,
        consecutive_errors: 0,
        last_error: None,
        event,
    }
}

/// A failed poll: `next = at + min(interval × 2^min(errors_before, 16), max_backoff)`, one more
/// consecutive error, tracking degraded from the third (DOMAIN §4). The remote state is kept.
pub fn on_failure(row: &TaskRow, error: PollError, at: Timestamp, policy: &Policy) -> PollUpdate {
    let before = row.poll.consecutive_errors;
    let cap = if mutation::active(Mutant::PollBackoffUncapped) {
        MAX_POLL_DELAY
    } else {
        policy.max_poll_backoff
    };
    let delay = Policy::backoff(policy.poll_interval, before, cap);
    let errors = before.saturating_add(1);
    let error = PollError {
        class: error.class,
        message: bounded(&error.message, MAX_STORED_ERROR),
    };
    let degraded = (errors >= DEGRADED_AFTER).then_some(&error);
    let event = Event::build(&row.identity, &row.remote, degraded).map(Event::fingerprinted);
    PollUpdate {
        remote: row.remote.clone(),
        next_poll_at: Some(at.plus(delay)),
        consecutive_errors: errors,
        last_error: Some(error),
        event,
    }
}

/// Writes a guarded poll update onto the row, releases the poll lease and records the event.
pub fn apply(row: &mut TaskRow, update: PollUpdate, now: Timestamp) -> Recorded {
    row.remote = update.remote;
    row.poll.next_poll_at = update.next_poll_at;
    row.poll.consecutive_errors = update.consecutive_errors;
    row.poll.last_error = update.last_error;
    row.poll.lease = None;
    let recorded = record_event(&mut row.outbox, update.event, now);
    debug_check_row(row);
    recorded
}

/// Releases the poll lease without a result: the next poll is at `retry_at` — unless the task
/// became terminal meanwhile (a cancel finished it while the poll was claimed): a terminal task
/// is never polled again.
pub fn release(row: &mut TaskRow, retry_at: Timestamp) {
    row.poll.lease = None;
    if !row.remote.status.is_terminal() {
        row.poll.next_poll_at = Some(retry_at);
    }
    debug_check_row(row);
}
