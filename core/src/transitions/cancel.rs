//! Cancellation (DOMAIN §6): a request only records intent; the cancel loop does the work under
//! its own lease and budget, and its terminal snapshot produces one normal notification.
//!
//! Cancel work ends three ways, and none leaves the task unwatched: a terminal snapshot (the
//! task is done), an acknowledgement (the server took the cancel but the task ends later), or a
//! spent budget (a visible cancel dead letter). After the last two the task is polled again
//! until it is terminal, so its real end is still delivered.

use crate::invariants::debug_check_row;
use crate::lease::Lease;
use crate::mutation::{self, Mutant};
use crate::policy::{stored_error, Policy};
use crate::status::CancelStatus;
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
    debug_check_row(row);
    result
}

fn record_request(row: &mut TaskRow, now: Timestamp) -> RequestResult {
    if row.remote.status.is_terminal() {
        return RequestResult::AlreadyFinished;
    }
    if row.cancel.requested_at.is_some() {
        if mutation::active(Mutant::CancelRepeatClearsLease) {
            row.cancel.lease = None;
        }
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
    /// The remote cancel failed (unavailable, or rejected — e.g. a legacy server's "already
    /// terminal" error): counted, retried after backoff.
    Failed(String),
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
    let voided_until = voided_until.filter(|_| !mutation::active(Mutant::CancelEndPollsAtOnce));
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
            row.cancel.failures += 1;
            row.cancel.last_error = Some(stored_error(&error));
            row.cancel.due_at = Some(now.plus(policy.retry_delay(row.cancel.failures)));
            None
        }
        CancelAction::BudgetExhausted => {
            end_work(row, CancelStatus::DeadLetter);
            None
        }
    }
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
