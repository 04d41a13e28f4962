//! Cancels are never abandoned for an outage (DOMAIN §6): cancel work is dead-lettered for its
//! budget only after the remote server refused the cancel that many times. An unanswered cancel
//! (the server down, a partition, a 5xx, a reply dropped on the way back) is waited out and
//! never counted, so a budget dead letter without [`CANCEL_BUDGET`] refusals the server sent
//! back means an outage was counted against the user's cancel.
//!
//! Read from the remote host's served answers (not dropped) and the store's accepted cancel
//! writes: no engine bookkeeping.

use super::facts::Facts;
use super::{Invariant, Verdict};
use crate::history::write_action::WriteAction;
use crate::history::{RemoteOp, Seen};
use crate::wire::mcp::McpAnswer;
use tasklatch_core::policy::CANCEL_BUDGET;

pub(super) fn check(f: &Facts<'_>, v: &mut Verdict) {
    for (i, e) in f.entries.iter().enumerate() {
        let Seen::StoreWrite { rows, .. } = &e.event else {
            continue;
        };
        for r in rows {
            if r.outcome.is_err() || r.action != WriteAction::CancelBudgetExhausted {
                continue;
            }
            let Some(&n) = f.n_of.get(r.task_id.as_str()) else {
                continue;
            };
            let refusals = f.held.get(&n).map_or(0, |remote| refusals(f, remote, i));
            if refusals < CANCEL_BUDGET {
                v.push(
                    Invariant::Lost,
                    f.label(&r.task_id),
                    Some(i),
                    format!(
                        "the cancel was dead-lettered for its budget, but the server refused it only {refusals} times (an unanswered cancel was counted)"
                    ),
                );
            }
        }
    }
}

/// Cancels of `remote_id` the server refused and whose refusal reached the caller, before
/// history entry `before`.
fn refusals(f: &Facts<'_>, remote_id: &str, before: usize) -> u32 {
    let refused = f.entries[..before].iter().filter(|e| {
        matches!(&e.event, Seen::RemoteServed {
            remote_id: r,
            op: RemoteOp::Cancel,
            answer: McpAnswer::Rejected(_),
            dropped: false,
        } if r == remote_id)
    });
    u32::try_from(refused.count()).unwrap_or(u32::MAX)
}
