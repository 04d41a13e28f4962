//! Retention: which finished rows may be deleted ([`crate::store::Store::prune_finished`]).
//!
//! A row may go only when nothing can ever happen to it again and nothing it owes is still
//! owed: its remote task is terminal (no more polls), every event version is settled —
//! delivered, dropped or dead-lettered (`notified_version == event_version`), no dispatch is in
//! flight, no cancel is still to do (`requested`), no lease is held at `now`, and its remote
//! state last changed before the cutoff. Undelivered work is never deleted.

use crate::lease::Lease;
use crate::status::CancelStatus;
use crate::task::TaskRow;
use crate::time::Timestamp;

/// Whether `row` may be deleted at `now` when rows finished before `finished_before` are due
/// for deletion (see the module documentation).
pub fn prunable(row: &TaskRow, now: Timestamp, finished_before: Timestamp) -> bool {
    row.remote.status.is_terminal()
        && row.remote.updated_at < finished_before
        && !row.outbox.has_undelivered()
        && !row.outbox.status.in_flight()
        && row.cancel.status != CancelStatus::Requested
        && Lease::is_free(row.poll.lease.as_ref(), now)
        && Lease::is_free(row.outbox.lease.as_ref(), now)
        && Lease::is_free(row.cancel.lease.as_ref(), now)
}
