//! Coverage of clock skew in both directions at once: while the run lasted, one worker's clock
//! ran ahead while another's ran behind (two skew faults of opposite signs, on different
//! workers, whose windows overlap, both having taken effect). Leases and due times are then
//! judged by clocks that disagree both ways — a lease one worker sees as expired another sees
//! as live for longer than the lease.

use crate::history::{Entry, Seen};
use crate::plan::fault::{Fault, FaultKind};
use crate::plan::Plan;

/// Whether the faults of `plan` that took effect in `entries` skewed two workers' clocks in
/// opposite directions at the same time.
pub fn skewed_both_ways(plan: &Plan, entries: &[Entry]) -> bool {
    let skews: Vec<(u32, i64, &Fault)> = entries
        .iter()
        .filter_map(|e| match e.event {
            Seen::FaultFired { index } => plan.faults.get(index),
            _ => None,
        })
        .filter_map(|f| match f.kind {
            FaultKind::Skew { worker, skew_ms } if skew_ms != 0 => Some((worker, skew_ms, f)),
            _ => None,
        })
        .collect();
    skews.iter().any(|&(w, ahead, a)| {
        ahead > 0
            && skews.iter().any(|&(v, behind, b)| {
                v != w && behind < 0 && a.at_ms < b.at_ms + b.for_ms && b.at_ms < a.at_ms + a.for_ms
            })
    })
}
