//! What a poll result means (DOMAIN §4): the new remote state, the next poll, the error count
//! and the event to record. Computed by the worker from its claimed row; the store applies it
//! under the poll lease with [`apply`], recording the event against the *current* outbox.

use crate::event::{Event, Fingerprint};
use crate::invariants::debug_check_row;
use crate::mutation::{self, planted, Mutant};
use crate::policy::{
    bounded, Policy, DEGRADED_AFTER, INPUT_REQUIRED_FLOOR, MALFORMED_STRIKES, MAX_POLL_DELAY,
    MAX_STORED_ERROR,
};
use crate::remote::{ErrorClass, PollError, RemoteState};
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
        let floor = INPUT_REQUIRED_FLOOR;
        let floor =
            mutation::substitute(Mutant::InputRequiredFloorDropped, floor, |_| MIN_POLL_DELAY);
        delay = delay.max(floor);
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
    let event = Event::build(&row.identity, &remote, None).map(Event::fingerprinted);
    let event = mutation::substitute(Mutant::UnrequestedCancelNotNotified, event, |event| {
        planted::unrequested_cancel_silenced(event, remote.status, row)
    });
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
    let cap = policy.max_poll_backoff;
    let cap = mutation::substitute(Mutant::PollBackoffUncapped, cap, |_| MAX_POLL_DELAY);
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

/// The update after a poll whose answer could not be decoded (`detail`: storable, redacted):
/// a failed poll of class [`ErrorClass::Malformed`], backed off like any failure — a proxy's
/// page or a cut stream passes — until this is the [`MALFORMED_STRIKES`]th failed poll of a run
/// whose latest failure before it was malformed too; then the protocol error ends the task
/// `failed`.
pub fn on_malformed(row: &TaskRow, detail: &str, at: Timestamp, policy: &Policy) -> PollUpdate {
    let detail = bounded(detail, MAX_STORED_ERROR);
    let last_malformed = row
        .poll
        .last_error
        .as_ref()
        .is_some_and(|e| e.class == ErrorClass::Malformed);
    let failed_before = if last_malformed {
        row.poll.consecutive_errors
    } else {
        0
    };
    let strikes = MALFORMED_STRIKES;
    let strikes = mutation::substitute(Mutant::MalformedEndsAtOnce, strikes, |_| 1);
    if failed_before.saturating_add(1) >= strikes {
        return on_report(row, Err(ProtocolError::Malformed(detail)), at, policy);
    }
    let error = PollError {
        class: ErrorClass::Malformed,
        message: detail,
    };
    on_failure(row, error, at, policy)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::test_support::row;

    fn at(secs: i64) -> Timestamp {
        Timestamp::from_micros(secs * 1_000_000)
    }

    /// Applies `update` the way a store does, for the next poll to read.
    fn applied(mut r: TaskRow, update: PollUpdate) -> TaskRow {
        r.remote = update.remote;
        r.poll.consecutive_errors = update.consecutive_errors;
        r.poll.last_error = update.last_error;
        r.poll.next_poll_at = update.next_poll_at;
        r
    }

    /// A proxy's page or a cut stream passes: [`MALFORMED_STRIKES`] − 1 undecodable answers in
    /// a row leave the task working (backed off, the class visible); the next one ends it.
    #[test]
    fn malformed_answers_end_a_task_only_when_they_repeat() {
        let policy = Policy::default();
        let mut r = row("t1", "task", RemoteStatus::Working, 1_000);
        for n in 1..MALFORMED_STRIKES {
            let update = on_malformed(&r, "<html>502 Bad Gateway</html>", at(n.into()), &policy);
            assert_eq!(update.remote.status, RemoteStatus::Working, "strike {n}");
            assert_eq!(update.consecutive_errors, n);
            let class = update.last_error.as_ref().map(|e| e.class);
            assert_eq!(class, Some(ErrorClass::Malformed));
            assert!(update.next_poll_at.is_some(), "polled again");
            r = applied(r, update);
        }
        let update = on_malformed(&r, "<html>502 Bad Gateway</html>", at(99), &policy);
        assert_eq!(update.remote.status, RemoteStatus::Failed);
        let error = update.remote.error.unwrap_or_default();
        assert!(error.contains("malformed payload: <html>"), "{error}");
    }

    /// The run counts only when the failure before was malformed too: timeouts then one page
    /// leave the task working; a decoded report starts the count again.
    #[test]
    fn a_malformed_answer_after_other_failures_or_a_report_starts_a_new_count() {
        let policy = Policy::default();
        let mut r = row("t1", "task", RemoteStatus::Working, 1_000);
        r.poll.consecutive_errors = MALFORMED_STRIKES + 2;
        r.poll.last_error = Some(PollError {
            class: ErrorClass::Timeout,
            message: "timed out".into(),
        });
        let update = on_malformed(&r, "cut stream", at(5), &policy);
        assert_eq!(update.remote.status, RemoteStatus::Working);
        r.poll.consecutive_errors = 0;
        r.poll.last_error = None;
        let update = on_malformed(&r, "cut stream", at(6), &policy);
        assert_eq!(update.remote.status, RemoteStatus::Working);
    }

    /// The planted bug ends the task on its first undecodable answer: the strike test above
    /// fails under it.
    #[cfg(feature = "mutations")]
    #[test]
    fn under_the_planted_bug_one_malformed_answer_ends_the_task() {
        let _on = mutation::activate(Some(Mutant::MalformedEndsAtOnce));
        let r = row("t1", "task", RemoteStatus::Working, 1_000);
        let update = on_malformed(&r, "cut stream", at(1), &Policy::default());
        assert_eq!(update.remote.status, RemoteStatus::Failed);
    }
}
