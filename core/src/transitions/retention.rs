//! Retention: which finished rows may be deleted ([`crate::store::Store::prune_finished`]).
//!
//! A row may go only when nothing can ever happen to it again and nothing it owes is still
//! owed: its remote task is terminal (no more polls), every event version is settled —
//! delivered, dropped or dead-lettered (`notified_version == event_version`), no dispatch is in
//! flight, no cancel is still to do (`requested`), no lease is held at `now`, and both its
//! remote state last changed and its notification last settled ([`crate::task::Outbox::settled_at`])
//! before the cutoff. A dead letter (DOMAIN §10) is kept until an operator requeues it or it
//! became a dead letter before its own, longer cutoff; one whose moment is unknown is kept.
//! Undelivered work is never deleted.

use crate::lease::Lease;
use crate::mutation::{self, Mutant};
use crate::status::{CancelStatus, NotifyStatus};
use crate::store::PruneRequest;
use crate::task::TaskRow;

/// Whether `row` may be deleted at `now` when rows finished before `req.finished_before` and
/// dead letters settled before `req.dead_letters_before` are due (see the module
/// documentation).
pub fn prunable(row: &TaskRow, req: &PruneRequest) -> bool {
    let now = req.now;
    let settled = row.outbox.settled_at;
    let aged = row
        .remote
        .updated_at
        .max(settled.unwrap_or(row.remote.updated_at));
    let dead_letter_aged = row.outbox.status != NotifyStatus::DeadLetter
        || settled.is_some_and(|at| at < req.dead_letters_before);
    let dead_letter_aged = mutation::substitute(
        Mutant::DeadLettersPrunedLikeAnyRow,
        dead_letter_aged,
        |_| true,
    );
    row.remote.status.is_terminal()
        && aged < req.finished_before
        && dead_letter_aged
        && !row.outbox.has_undelivered()
        && !row.outbox.status.in_flight()
        && row.cancel.status != CancelStatus::Requested
        && Lease::is_free(row.poll.lease.as_ref(), now)
        && Lease::is_free(row.outbox.lease.as_ref(), now)
        && Lease::is_free(row.cancel.lease.as_ref(), now)
}
