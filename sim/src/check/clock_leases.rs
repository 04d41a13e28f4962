//! A lease stamped on a wrong clock is never used: no remote call, launch, run lookup or
//! interrupt is made under a lease whose expiry the claimer stamped while its wall clock was
//! far from the store's.
//!
//! Leases are stamped by the claimer's clock, so a lease taken on a clock that runs behind
//! looks expired to every other worker from the moment it is written, and one taken on a clock
//! that runs ahead outlives its term. The skew guard exists so that no such lease is acted on:
//! a pass whose clock check refuses claims nothing, and gives back uncounted the rows the
//! poll write just handed off to it (they were stamped by the same clock).
//!
//! Read from outside: each grant's stamped expiry against the simulated instant the store
//! answered it, less the lease's length, is the clock's offset at the stamp, give or take the
//! store call (the stamp is taken before the request leaves). An offset beyond twice the
//! guard's limit plus the store's call deadline is a clock the guard must have refused; the
//! plans' far skews and clock steps (8 s and more) are beyond it, the skews the guard lets
//! through are not.

use super::facts::Facts;
use super::leased_calls::{claim_of, lease_length, leased_call};
use super::{Invariant, Verdict};
use crate::plan::naming::task_label;
use crate::plan::timing::EPOCH_SECS;
use crate::plan::timing::{sim_policy, sim_timeouts};
use std::collections::BTreeMap;
use tasklatch_core::lease::LeaseKind;

/// A grant's clock offset, in µs, beyond which its claimer's clock was plainly wrong.
fn wrong_offset_us() -> i64 {
    let slack = 2 * sim_policy().max_clock_skew + sim_timeouts().store;
    slack.as_micros() as i64
}

pub(super) fn check(f: &Facts<'_>, v: &mut Verdict) {
    // (worker, task id, lease kind) → the newest grant's clock offset at its stamp, in µs.
    let mut offsets: BTreeMap<(u32, &str, LeaseKind), i64> = BTreeMap::new();
    let (wrong_us, allowed_ms) = (wrong_offset_us(), sim_policy().max_clock_skew.as_millis());
    for (i, e) in f.entries.iter().enumerate() {
        if let Some((w, lease, grants)) = claim_of(&e.event) {
            let lease_us = lease_length(lease).as_micros() as i64;
            let at_us = EPOCH_SECS as i64 * 1_000_000 + e.at_us as i64;
            for g in grants {
                offsets.insert(
                    (w, g.task_id.as_str(), lease),
                    g.expires_us - lease_us - at_us,
                );
            }
            continue;
        }
        let Some(call) = leased_call(f, &e.event) else {
            continue;
        };
        let (lane, kind, what) = (call.lane, call.kind, call.what);
        let Some(w) = call.worker() else {
            continue;
        };
        let wrong = call.task_ids.iter().find_map(|id| {
            let offset = *offsets.get(&(w, *id, kind))?;
            (offset.abs() > wrong_us).then_some((*id, offset))
        });
        if let Some((id, offset)) = wrong {
            v.push(
                Invariant::Fenced,
                f.n_of.get(id).map(|n| task_label(*n)),
                Some(i),
                format!(
                    "{lane} made a {what} under a {} lease stamped by a clock {} ms off the \
                     store's (the skew guard allows {} ms)",
                    kind.as_str(),
                    offset / 1_000,
                    allowed_ms,
                ),
            );
        }
    }
}
