//! Write guards: every lease-guarded write passes through one of these before it changes a row.

use crate::lease::{check_lease, Lease, LeaseKind, Refusal};
use crate::mutation::{self, Mutant};
use crate::task::TaskRow;
use crate::time::Timestamp;

/// A poll result may be applied only while the claim's lease is held and was unexpired when
/// the remote call completed, no cancel work is in progress, and the task is not terminal
/// (DOMAIN §4, §6). A poll claimed before a cancel request is refused as long as the cancel
/// work runs (cancel requested) and after it ended (lease not held: ending the cancel work
/// clears the poll lease, see [`crate::transitions::cancel::apply`]).
pub fn poll_apply(row: &TaskRow, lease: &Lease, completed_at: Timestamp) -> Result<(), Refusal> {
    check_lease(row.poll.lease.as_ref(), lease, completed_at)?;
    let cancelling = crate::transitions::cancel::in_progress(row);
    let cancelling = mutation::substitute(Mutant::PollAppliedAfterCancel, cancelling, |_| false);
    if cancelling {
        return Err(Refusal::CancelRequested);
    }
    if row.remote.status.is_terminal() {
        return Err(Refusal::Terminal);
    }
    Ok(())
}

/// A notification write needs the claim's lease at `now` and the same dispatch version.
pub fn notify_write(
    row: &TaskRow,
    lease: &Lease,
    dispatch_version: u64,
    now: Timestamp,
) -> Result<(), Refusal> {
    check_lease(row.outbox.lease.as_ref(), lease, now)?;
    if row.outbox.dispatch_version != dispatch_version {
        return Err(Refusal::VersionMoved);
    }
    Ok(())
}

/// A cancel write needs the cancel claim's lease at `now`.
pub fn cancel_write(row: &TaskRow, lease: &Lease, now: Timestamp) -> Result<(), Refusal> {
    check_lease(row.cancel.lease.as_ref(), lease, now)
}

/// An answer outcome needs the poll claim's lease at `now`, and the answer must be that claim's
/// attempt (`sending` with its token); otherwise the lease is, for this write, not held.
pub fn answer_write(row: &TaskRow, lease: &Lease, now: Timestamp) -> Result<(), Refusal> {
    check_lease(row.poll.lease.as_ref(), lease, now)?;
    if !crate::transitions::answer::to_send(row, lease.token) {
        return Err(Refusal::LeaseNotHeld);
    }
    Ok(())
}

/// A release needs the claim's lease of that kind at `now`.
pub fn release(
    row: &TaskRow,
    kind: LeaseKind,
    lease: &Lease,
    now: Timestamp,
) -> Result<(), Refusal> {
    check_lease(row.lease(kind), lease, now)
}
