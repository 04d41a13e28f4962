//! The calls a worker makes under a lease, as the world saw them: remote status, answer and
//! cancel calls, launches, run lookups and run interrupts, each with the lease kind it needs and
//! the stored tasks it may be made for.

use super::facts::Facts;
use crate::history::{parse_key, Grant, RemoteOp, Seen};
use crate::plan::naming::worker_number;
use crate::plan::timing::sim_policy;
use std::time::Duration;
use tasklatch_core::lease::LeaseKind;

/// One call made under a lease.
pub(super) struct LeasedCall<'a> {
    /// The worker lane that made it (`worker-1/0`).
    pub lane: &'a str,
    /// The lease it needs.
    pub kind: LeaseKind,
    /// The stored tasks it may be made for (a remote id two submits share names both).
    pub task_ids: Vec<&'a str>,
    /// What it is, for a violation's text.
    pub what: &'static str,
    /// When it started, µs since the start.
    pub started_us: u64,
}

/// The claim `event` records, if it is one: the claiming worker, the lease kind and the grants.
pub(super) fn claim_of(event: &Seen) -> Option<(u32, LeaseKind, &[Grant])> {
    let Seen::StoreClaim {
        lease,
        worker,
        grants,
        ..
    } = event
    else {
        return None;
    };
    Some((worker_number(worker)?, *lease, grants))
}

impl LeasedCall<'_> {
    /// The number of the worker whose lane made the call.
    pub(super) fn worker(&self) -> Option<u32> {
        self.lane.split('/').next().and_then(worker_number)
    }
}

/// The simulated policy's lease of `kind`.
pub(super) fn lease_length(kind: LeaseKind) -> Duration {
    let policy = sim_policy();
    match kind {
        LeaseKind::Poll => policy.poll_lease,
        LeaseKind::Notify => policy.notify_lease,
        LeaseKind::Cancel => policy.cancel_lease,
    }
}

/// The call `event` records, if it is one made under a lease. A lookup or interrupt of a run
/// no launch created is nobody's call (another rule judges it).
pub(super) fn leased_call<'a>(f: &Facts<'a>, event: &'a Seen) -> Option<LeasedCall<'a>> {
    let (lane, kind, task_ids, what, started_us) = match event {
        Seen::PortRemote {
            lane,
            remote_id,
            op,
            started_us,
            ..
        } => {
            let (kind, what) = match op {
                RemoteOp::Status => (LeaseKind::Poll, "remote status call"),
                RemoteOp::Answer => (LeaseKind::Poll, "remote answer call"),
                RemoteOp::Cancel => (LeaseKind::Cancel, "remote cancel call"),
                RemoteOp::Submit => return None,
            };
            let tasks = f.holders.get(remote_id.as_str()).into_iter().flatten();
            let ids = tasks.filter_map(|n| f.task_ids.get(n).copied()).collect();
            (lane, kind, ids, what, started_us)
        }
        Seen::PortLaunch {
            lane,
            key,
            started_us,
            ..
        } => {
            let (id, _, _) = parse_key(key)?;
            (lane, LeaseKind::Notify, vec![id], "launch", started_us)
        }
        Seen::PortLookup {
            lane,
            run,
            started_us,
            ..
        } => {
            let id = f.runs.get(run.as_str())?.task_id;
            (lane, LeaseKind::Notify, vec![id], "run lookup", started_us)
        }
        Seen::PortInterrupt {
            lane,
            run,
            started_us,
            ..
        } => {
            let id = f.runs.get(run.as_str())?.task_id;
            (
                lane,
                LeaseKind::Notify,
                vec![id],
                "run interrupt",
                started_us,
            )
        }
        _ => return None,
    };
    Some(LeasedCall {
        lane,
        kind,
        task_ids,
        what,
        started_us: *started_us,
    })
}
