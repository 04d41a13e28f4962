//! Every remote call a worker lane makes under a lease starts while the lease still has the
//! policy's `min_lease_left`, measured in real (simulated) time from the store's grant.
//!
//! The engine measures what is left of a lease from just before it sent the claim, which is
//! no later than the store's grant, so a call it starts always leaves more than the margin of
//! the real lease. A worker that judges the lease on its wall clock alone is fooled when that
//! clock steps back mid-pass, and calls after another worker may hold the row.
//!
//! Read from outside: the grants the store answered and the calls the worker ports made. A
//! claim does not name the lane, so a call is judged against the newest grant to its worker
//! on any task that holds the call's remote id (the most generous reading).

use super::facts::Facts;
use super::{Invariant, Verdict};
use crate::history::{RemoteOp, Seen};
use crate::plan::naming::{task_label, worker_number};
use crate::plan::timing::sim_policy;
use std::collections::BTreeMap;
use tasklatch_core::lease::LeaseKind;

/// The simulated policy's lease of `kind`, in µs.
fn lease_us(kind: LeaseKind) -> u64 {
    let policy = sim_policy();
    match kind {
        LeaseKind::Poll => policy.poll_lease,
        LeaseKind::Notify => policy.notify_lease,
        LeaseKind::Cancel => policy.cancel_lease,
    }
    .as_micros() as u64
}

/// (worker, task id, lease kind) → when the newest grant was answered.
type Granted<'a> = BTreeMap<(u32, &'a str, LeaseKind), u64>;

/// When the newest `kind` grant that worker `w` holds for a task of `remote_id` was answered.
fn newest_grant(
    f: &Facts<'_>,
    granted: &Granted<'_>,
    w: u32,
    remote_id: &str,
    kind: LeaseKind,
) -> Option<u64> {
    f.holders
        .get(remote_id)
        .into_iter()
        .flatten()
        .filter_map(|n| f.task_ids.get(n))
        .filter_map(|id| granted.get(&(w, *id, kind)))
        .max()
        .copied()
}

pub(super) fn check(f: &Facts<'_>, v: &mut Verdict) {
    let policy = sim_policy();
    let margin_us = policy.min_lease_left.as_micros() as u64;
    let mut granted: Granted<'_> = BTreeMap::new();
    for (i, e) in f.entries.iter().enumerate() {
        match &e.event {
            Seen::StoreClaim {
                lease,
                worker,
                grants,
                ..
            } => {
                let Some(w) = worker_number(worker) else {
                    continue;
                };
                for g in grants {
                    granted.insert((w, g.task_id.as_str(), *lease), e.at_us);
                }
            }
            Seen::PortRemote {
                lane,
                remote_id,
                op,
                started_us,
                ..
            } => {
                let kind = match op {
                    RemoteOp::Status | RemoteOp::Answer => LeaseKind::Poll,
                    RemoteOp::Cancel => LeaseKind::Cancel,
                    RemoteOp::Submit => continue,
                };
                let Some(w) = lane.split('/').next().and_then(worker_number) else {
                    continue;
                };
                // A call no grant covers is another rule's business (the fencing of writes).
                let Some(grant_us) = newest_grant(f, &granted, w, remote_id, kind) else {
                    continue;
                };
                if *started_us + margin_us >= grant_us + lease_us(kind) {
                    let task = f
                        .n_of_remote
                        .get(remote_id.as_str())
                        .map(|n| task_label(*n));
                    v.push(
                        Invariant::Fenced,
                        task,
                        Some(i),
                        format!(
                            "{lane} started a remote {op:?} call {} ms after its {} lease was \
                             granted: less than min_lease_left ({} s) of the {} s lease was left",
                            (*started_us - grant_us) / 1_000,
                            kind.as_str(),
                            policy.min_lease_left.as_secs(),
                            lease_us(kind) / 1_000_000,
                        ),
                    );
                }
            }
            _ => {}
        }
    }
}
