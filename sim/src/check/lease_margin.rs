//! Calls inside the lease: every call a worker lane makes under a lease — a remote status,
//! answer or cancel call, a launch, a run lookup, a run interrupt — starts while the lease
//! still has the policy's `min_lease_left`, measured in real (simulated) time from the store's
//! grant.
//!
//! The engine measures what is left of a lease from just before it sent the claim, which is
//! no later than the store's grant, so a call it starts always leaves more than the margin of
//! the real lease. A worker that judges the lease on its wall clock alone is fooled when that
//! clock steps back mid-pass, and calls after another worker may hold the row.
//!
//! Read from outside: the grants the store answered and the calls the worker ports made, with
//! the instant each call started. A claim does not name the lane, so a call is judged against
//! the newest grant to its worker on any task the call may be for (the most generous reading).

use super::facts::Facts;
use super::leased_calls::{claim_of, lease_length, leased_call};
use super::{Invariant, Verdict};
use crate::plan::naming::task_label;
use crate::plan::timing::sim_policy;
use std::collections::BTreeMap;
use tasklatch_core::lease::LeaseKind;

/// (worker, task id, lease kind) → when the newest grant was answered.
type Granted<'a> = BTreeMap<(u32, &'a str, LeaseKind), u64>;

pub(super) fn check(f: &Facts<'_>, v: &mut Verdict) {
    let policy = sim_policy();
    let margin_us = policy.min_lease_left.as_micros() as u64;
    let mut granted: Granted<'_> = BTreeMap::new();
    for (i, e) in f.entries.iter().enumerate() {
        if let Some((w, lease, grants)) = claim_of(&e.event) {
            for g in grants {
                granted.insert((w, g.task_id.as_str(), lease), e.at_us);
            }
            continue;
        }
        let Some(call) = leased_call(f, &e.event) else {
            continue;
        };
        let Some(w) = call.worker() else {
            continue;
        };
        // A call no grant covers is another rule's business (the fencing of writes).
        let newest = call.task_ids.iter().filter_map(|id| {
            let at = *granted.get(&(w, *id, call.kind))?;
            Some((at, *id))
        });
        let Some((grant_us, id)) = newest.max() else {
            continue;
        };
        let lease_us = lease_length(call.kind).as_micros() as u64;
        if call.started_us + margin_us >= grant_us + lease_us {
            v.push(
                Invariant::Fenced,
                f.n_of.get(id).map(|n| task_label(*n)),
                Some(i),
                format!(
                    "{} started a {} {} ms after its {} lease was granted: less than \
                     min_lease_left ({} s) of the {} s lease was left",
                    call.lane,
                    call.what,
                    call.started_us.saturating_sub(grant_us) / 1_000,
                    call.kind.as_str(),
                    policy.min_lease_left.as_secs(),
                    lease_us / 1_000_000,
                ),
            );
        }
    }
}
