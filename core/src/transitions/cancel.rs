//! Cancellation (DOMAIN §6): a request only records intent; the cancel loop does the work under
//! its own lease and budget, and its terminal snapshot produces one normal notification.
//!
//! Cancel work ends three ways, and none leaves the task unwatched: a terminal snapshot (the
//! task is done), an acknowledgement (the server took the cancel but the task ends later), or a
//! spent budget or an outage that lasted `max_unavailable` (a visible cancel dead letter, which
//! an operator can requeue). After the last two the task is polled again
//! until it is terminal, so its real end is still delivered.

use crate::invariants::debug_check_row;
use crate::lease::Lease;
use crate::mutation::{self, planted, Mutant};
use crate::policy::{stored_error, Policy};
use crate::status::{CancelStatus, DeadLetterReason};
use crate::task::TaskRow;
use crate::time::Timestamp;
use crate::transitions::outbox::{record_event, Recorded};
use crate::transitions::poll::PollUpdate;
use serde::{Deserialize, Serialize};

/// What a cancel request found.
#[derive(Copy, Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub enum RequestResult {
    /// The first request: recorded, cancel work scheduled, the poll lease void.
    Requested,
    /// A request was already recorded: nothing changed.
    AlreadyRequested,
    /// The task is terminal: nothing to cancel, nothing changed.
    AlreadyFinished,
}

/// Records a cancel request at `now`. The first request sets `requested_at` and schedules the
/// cancel work; while that work is pending ([`in_progress`]) the poll lease is void: the poll
/// guard ([`crate::transitions::guard::poll_apply`]) refuses every poll result, whenever that
/// poll completed, and no new poll is claimed. When the cancel work ends without a terminal
/// snapshot (acknowledged, or its budget spent) [`apply`] clears the poll lease, so a poll
/// claimed before that moment is still refused (by the lease guard: its lease is gone) and only
/// polls claimed afterwards apply. Repeats change nothing — in particular they never disturb a
/// cancel already in progress, nor restart one that ended.
pub fn request(row: &mut TaskRow, now: Timestamp) -> RequestResult {
    let result = record_request(row, now);
    let next = row.poll.next_poll_at;
    row.poll.next_poll_at = mutation::substitute(Mutant::RepeatCancelPausesPolls, next, |next| {
        planted::repeat_paused_polls(next, result, now)
    });
    debug_check_row(row);
    result
}

fn record_request(row: &mut TaskRow, now: Timestamp) -> RequestResult {
    if row.remote.status.is_terminal() {
        return RequestResult::AlreadyFinished;
    }
    if row.cancel.requested_at.is_some() {
        // A repeat changes nothing: the cancel work keeps its lease, and ended work stays ended.
        let lease = row.cancel.lease.take();
        row.cancel.lease = mutation::substitute(Mutant::CancelRepeatClearsLease, lease, |_| None);
        let work = (row.cancel.status, row.cancel.due_at);
        (row.cancel.status, row.cancel.due_at) =
            mutation::substitute(Mutant::RepeatRestartsEndedCancel, work, |w| {
                planted::cancel_restarted(w, now)
            });
        return RequestResult::AlreadyRequested;
    }
    row.cancel.requested_at = Some(now);
    row.cancel.status = CancelStatus::Requested;
    row.cancel.due_at = Some(now);
    row.remote.updated_at = now;
    RequestResult::Requested
}

/// Whether cancel work is pending: requested and neither done nor dead-lettered. Exactly then
/// polling stands still (no poll claim, no poll result applied).
pub fn in_progress(row: &TaskRow) -> bool {
    row.cancel.status == CancelStatus::Requested
}

/// Whether the cancel loop may claim the row at `now`.
pub fn claimable(row: &TaskRow, now: Timestamp) -> bool {
    row.cancel.status == CancelStatus::Requested
        && row.cancel.due_at.is_some_and(|d| d <= now)
        && Lease::is_free(row.cancel.lease.as_ref(), now)
}

/// The outcome of one cancel attempt, applied under the cancel lease.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub enum CancelAction {
    /// The remote returned a terminal snapshot (cancelled, or completed/failed if it finished
    /// first), or a protocol error made the task `failed`.
    Finished(Box<PollUpdate>),
    /// The remote acknowledged the cancel with a non-terminal report (the tasks extension: the
    /// task ends later). Not a failure: the cancel work is done, the report is applied like a
    /// poll result, and polling resumes until the task is terminal.
    Acknowledged(Box<PollUpdate>),
    /// The remote server refused the cancel (e.g. a legacy server's "already terminal" error):
    /// counted, retried after backoff.
    Failed(String),
    /// The remote server did not answer (unreachable, timed out, 5xx, rate limited): not a
    /// failure (DOMAIN §6). The cancel is retried after the capped unavailability backoff; only
    /// an outage that has lasted `max_unavailable` dead-letters it.
    Unavailable(String),
    /// The cancel budget is spent (checked before the remote call): a visible cancel dead letter.
    /// Polling resumes, so the task's real end is still learned and delivered.
    BudgetExhausted,
}

/// Applies a guarded cancel action and releases the cancel lease. Returns what the outbox did
/// when a snapshot was applied.
///
/// Every action that ends the cancel work (finished, acknowledged, budget spent) also clears
/// the poll lease: polling resumes after an acknowledgement or a dead letter, and a poll
/// claimed before this write — its result computed before the cancel settled — must never
/// apply; with its lease gone the poll guard refuses it (and its release) as not held. Its
/// holder may still be calling the remote server until that lease's expiry, so the next poll
/// is due no earlier than it: never two remote polls of one task at once.
pub fn apply(
    row: &mut TaskRow,
    action: CancelAction,
    now: Timestamp,
    policy: &Policy,
) -> Option<Recorded> {
    let recorded = apply_action(row, action, now, policy);
    debug_check_row(row);
    recorded
}

fn apply_action(
    row: &mut TaskRow,
    action: CancelAction,
    now: Timestamp,
    policy: &Policy,
) -> Option<Recorded> {
    row.cancel.lease = None;
    let voided_until = row.poll.lease.as_ref().map(|l| l.expires_at);
    let voided_until = mutation::substitute(Mutant::CancelEndPollsAtOnce, voided_until, |_| None);
    let recorded = apply_outcome(row, action, now, policy);
    if !in_progress(row) {
        row.poll.next_poll_at = row
            .poll
            .next_poll_at
            .map(|next| voided_until.map_or(next, |until| next.max(until)));
    }
    recorded
}

fn apply_outcome(
    row: &mut TaskRow,
    action: CancelAction,
    now: Timestamp,
    policy: &Policy,
) -> Option<Recorded> {
    match action {
        CancelAction::Finished(update) | CancelAction::Acknowledged(update) => {
            answered(row);
            end_work(row, CancelStatus::Done);
            if row.remote.status.is_terminal() {
                return None;
            }
            let update = *update;
            row.remote = update.remote;
            row.poll.next_poll_at = update.next_poll_at;
            row.poll.consecutive_errors = update.consecutive_errors;
            row.poll.last_error = update.last_error;
            Some(record_event(&mut row.outbox, update.event, now))
        }
        CancelAction::Failed(error) => {
            answered(row);
            row.cancel.failures += 1;
            row.cancel.last_error = Some(stored_error(&error));
            row.cancel.due_at = Some(now.plus(policy.retry_delay(row.cancel.failures)));
            None
        }
        CancelAction::Unavailable(error) => {
            wait_out(row, &error, now, policy);
            None
        }
        CancelAction::BudgetExhausted => {
            answered(row);
            end_work(row, CancelStatus::DeadLetter);
            None
        }
    }
}

/// The server answered (or the work ended for another reason): no outage is in progress.
fn answered(row: &mut TaskRow) {
    row.cancel.unavailable_since = None;
    row.cancel.outages = 0;
}

/// An unanswered remote cancel: no failure counted, the episode's start kept, due again after
/// the unavailability backoff — or, once the episode has lasted `max_unavailable`, a cancel dead
/// letter that keeps `unavailable_since` (its reason, [`dead_letter_reason`]).
fn wait_out(row: &mut TaskRow, error: &str, now: Timestamp, policy: &Policy) {
    row.cancel.last_error = Some(stored_error(error));
    if policy.outage_too_long(row.cancel.unavailable_since, now) {
        row.cancel.outages = 0;
        end_work(row, CancelStatus::DeadLetter);
        return;
    }
    row.cancel.unavailable_since.get_or_insert(now);
    row.cancel.outages = row.cancel.outages.saturating_add(1);
    row.cancel.failures = mutation::substitute(
        Mutant::CancelUnavailabilityCounted,
        row.cancel.failures,
        planted::one_more,
    );
    row.cancel.due_at = Some(now.plus(policy.unavailable_delay(row.cancel.outages)));
}

/// Why the cancel work was dead-lettered, or `None` while it is not: an outage that lasted
/// `max_unavailable` (the episode's start is kept), else the spent budget.
pub fn dead_letter_reason(row: &TaskRow) -> Option<DeadLetterReason> {
    (row.cancel.status == CancelStatus::DeadLetter).then(|| {
        if row.cancel.unavailable_since.is_some() {
            DeadLetterReason::Unavailable
        } else {
            DeadLetterReason::Budget
        }
    })
}

/// What an operator's requeue of a cancel dead letter did.
#[derive(Copy, Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub enum CancelRequeued {
    /// The cancel work is requested again: due now, with a fresh budget.
    Requeued,
    /// The cancel work is not dead-lettered (none, pending or done).
    NotDeadLettered,
    /// The task is terminal: there is nothing left to cancel; nothing changed.
    AlreadyFinished,
}

/// Requeues a cancel dead letter (operator action): the cancel work is requested again, due at
/// `now`, with its failures and outage forgotten, so the cancel loop calls the server again.
/// While it is pending polling stands still again, as after the first request. A
/// dead-lettered cancel holds no lease, so no fencing is needed; the store applies this
/// atomically per row.
pub fn requeue(row: &mut TaskRow, now: Timestamp) -> CancelRequeued {
    if row.cancel.status != CancelStatus::DeadLetter {
        return CancelRequeued::NotDeadLettered;
    }
    if row.remote.status.is_terminal() {
        return CancelRequeued::AlreadyFinished;
    }
    answered(row);
    row.cancel.status = CancelStatus::Requested;
    row.cancel.due_at = Some(now);
    row.cancel.failures = 0;
    row.cancel.last_error = None;
    debug_check_row(row);
    CancelRequeued::Requeued
}

/// Ends the cancel work with `status` and clears the poll lease (the fence of [`apply`]).
fn end_work(row: &mut TaskRow, status: CancelStatus) {
    row.cancel.status = status;
    row.cancel.due_at = None;
    row.poll.lease = None;
}

/// Releases the cancel lease without a result; `error` counts a failure.
pub fn release(row: &mut TaskRow, retry_at: Timestamp, error: Option<&str>) {
    row.cancel.lease = None;
    row.cancel.due_at = Some(retry_at);
    if let Some(e) = error {
        row.cancel.failures += 1;
        row.cancel.last_error = Some(stored_error(e));
    }
    debug_check_row(row);
}
