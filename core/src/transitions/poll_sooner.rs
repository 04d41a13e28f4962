//! Polls brought forward (DOMAIN §4): when a server that was failing answers again, the tasks
//! whose polls backed off during its outage are made due again — spread, so that neither the
//! server nor a fleet of workers is stampeded — instead of waiting out backoffs of up to
//! `max_poll_backoff`. An operator's `tasklatch tasks poll-now` does the same on request.
//!
//! Only the schedule moves, and only earlier: no lease, state or count changes, so a poll
//! brought forward is an ordinary poll, claimed and fenced like any other.

use crate::lease::Lease;
use crate::store::PollSooner;
use crate::task::TaskRow;
use crate::time::Timestamp;
use crate::transitions::cancel;

/// Whether `req` may bring `row`'s next poll forward: a pollable task of the requested server
/// (any, without one), no cancel work in progress, its poll lease free at `req.now`, next due
/// after `req.from`, and — with `req.backed_off_only` — its last poll failed.
pub fn selects(row: &TaskRow, req: &PollSooner) -> bool {
    row.remote.status.is_pollable()
        && !cancel::in_progress(row)
        && req
            .server
            .as_ref()
            .is_none_or(|s| *s == row.identity.server)
        && (!req.backed_off_only || row.poll.consecutive_errors > 0)
        && Lease::is_free(row.poll.lease.as_ref(), req.now)
        && row.poll.next_poll_at.is_some_and(|next| next > req.from)
}

/// When the `rank`-th selected row (0-based, in (next poll, id) order) is due: `req.from`
/// plus `rank` spacings.
pub fn slot(req: &PollSooner, rank: usize) -> Timestamp {
    let rank = u32::try_from(rank).unwrap_or(u32::MAX);
    req.from.plus(req.spacing.saturating_mul(rank))
}

/// Moves `row`'s next poll to `at` if that is earlier; whether it moved.
pub fn bring_forward(row: &mut TaskRow, at: Timestamp) -> bool {
    match row.poll.next_poll_at {
        Some(next) if at < next => {
            row.poll.next_poll_at = Some(at);
            true
        }
        _ => false,
    }
}
