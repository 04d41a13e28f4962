//! The checker: verifies DOMAIN §9 from the history alone (what the world saw), Jepsen-style.
//!
//! It reads what services served, what worker ports got back and what users saw; it never
//! reads the engine's bookkeeping. Each violation names the invariant, the task and the first
//! history entry involved.

mod acknowledged;
mod answers;
mod cancels;
mod clock_leases;
pub(crate) mod coverage;
mod degraded;
mod delivery;
mod disturbances;
mod facts;
mod fencing;
mod injection;
mod isolation;
mod landing;
mod launch_spacing;
mod lease_margin;
mod leased_calls;
mod missing_runs;
mod orphans;
mod reading;
mod repeats;
mod report_spacing;
mod retention;
mod runs;
mod seal;
mod shown;
mod spacing;

pub use facts::Facts;

use crate::history::Entry;
use crate::plan::Plan;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::time::Duration;

/// The invariants of DOMAIN §9, as the checker names them.
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Invariant {
    /// A task's latest event was never delivered.
    Lost,
    /// The same (task, version) was delivered twice, or one key yielded two runs.
    Duplicated,
    /// A run for a version (or task) that never existed.
    Unexpected,
    /// A run for an unchanged fingerprint, an empty event, or more than 5 failures of a version.
    Noisy,
    /// Deliveries out of order, or a frozen snapshot that changed between attempts.
    Ordered,
    /// A write from an expired or superseded lease, a poll applied after a cancel request,
    /// concurrent remote cancels or polls of one task, a stale snapshot after 409, a retry after 404, a run queued
    /// behind a busy thread instead of a 409.
    Fenced,
    /// A cross-owner listing, cancel or answer, or a remote cancel nobody asked for.
    Isolated,
    /// A secret in an output.
    Sealed,
    /// Untrusted text reaching a model live: a denied tag or a forged boundary marker in a
    /// prompt, a run context or a listing, or a prompt without exactly one frame.
    Injected,
    /// Something never settled after the faults stopped, a task went unpolled longer than the
    /// policy allows after they stopped, or a run seen going far past `max_run_life` was left
    /// running.
    Live,
}

impl Invariant {
    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Invariant::Lost => "lost",
            Invariant::Duplicated => "duplicated",
            Invariant::Unexpected => "unexpected",
            Invariant::Noisy => "noisy",
            Invariant::Ordered => "ordered",
            Invariant::Fenced => "fenced",
            Invariant::Isolated => "isolated",
            Invariant::Sealed => "sealed",
            Invariant::Injected => "injected",
            Invariant::Live => "live",
        }
    }
}

impl fmt::Display for Invariant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One broken invariant.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct Violation {
    /// Which invariant.
    pub invariant: Invariant,
    /// The task (`task-{n}`), when one is involved.
    pub task: Option<String>,
    /// Index of the first history entry involved.
    pub entry: Option<usize>,
    /// What exactly.
    pub detail: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.invariant)?;
        if let Some(t) = &self.task {
            write!(f, " [{t}]")?;
        }
        if let Some(e) = self.entry {
            write!(f, " at history entry {e}")?;
        }
        write!(f, ": {}", self.detail)
    }
}

/// What the checker counted.
#[derive(Clone, PartialEq, Eq, Debug, Default, Serialize, Deserialize)]
pub struct Counts {
    /// Successful runs (notifications delivered).
    pub delivered: u64,
    /// Tasks whose latest event was lost.
    pub lost: u64,
    /// Duplicated deliveries.
    pub duplicated: u64,
    /// Unexpected runs.
    pub unexpected: u64,
    /// Noisy runs.
    pub noisy: u64,
    /// Lease-guarded writes the store refused (the fencing at work).
    pub fenced_refused: u64,
    /// Snapshots dead-lettered because the thread was gone.
    pub dead_thread_gone: u64,
    /// Snapshots dead-lettered because the failure budget was spent.
    pub dead_budget: u64,
    /// Cancels dead-lettered because the cancel budget was spent.
    pub dead_cancel: u64,
}

/// The checker's verdict on one run.
#[derive(Clone, PartialEq, Eq, Debug, Default, Serialize, Deserialize)]
pub struct Verdict {
    /// Broken invariants, in the order found.
    pub violations: Vec<Violation>,
    /// Counts.
    pub counts: Counts,
}

impl Verdict {
    /// No invariant broken.
    pub fn passed(&self) -> bool {
        self.violations.is_empty()
    }

    /// The first violation, if any.
    pub fn first(&self) -> Option<&Violation> {
        self.violations.first()
    }

    pub(crate) fn push(
        &mut self,
        invariant: Invariant,
        task: Option<String>,
        entry: Option<usize>,
        detail: impl Into<String>,
    ) {
        self.violations.push(Violation {
            invariant,
            task,
            entry,
            detail: detail.into(),
        });
    }

    /// Records that the run did not settle within the liveness bound.
    pub fn add_liveness_failure(&mut self, bound: Duration) {
        self.push(
            Invariant::Live,
            None,
            None,
            format!("not settled {} s after the faults stopped", bound.as_secs()),
        );
    }

    /// Records that the simulation itself failed (a host crashed with an error).
    pub fn add_world_failure(&mut self, what: String) {
        self.push(Invariant::Live, None, None, what);
    }
}

/// Checks a run's history against DOMAIN §9.
pub fn check(plan: &Plan, entries: &[Entry]) -> Verdict {
    let facts = Facts::build(plan, entries);
    let mut v = Verdict::default();
    delivery::check(&facts, &mut v);
    fencing::check(&facts, &mut v);
    lease_margin::check(&facts, &mut v);
    clock_leases::check(&facts, &mut v);
    isolation::check(&facts, &mut v);
    injection::check(&facts, &mut v);
    answers::check(&facts, &mut v);
    runs::check(&facts, &mut v);
    missing_runs::check(&facts, &mut v);
    launch_spacing::check(&facts, &mut v);
    landing::check(&facts, &mut v);
    orphans::check(&facts, &mut v);
    cancels::check(&facts, &mut v);
    repeats::check(&facts, &mut v);
    acknowledged::check(&facts, &mut v);
    spacing::check(&facts, &mut v);
    report_spacing::check(&facts, &mut v);
    degraded::check(&facts, &mut v);
    retention::check(&facts, &mut v);
    v
}

/// What the checker's unit tests share.
#[cfg(test)]
mod test_support {
    use crate::history::{Entry, Seen};

    /// An entry of `host` at `secs` into the run, about no task.
    pub(super) fn at(secs: u64, host: &str, event: Seen) -> Entry {
        Entry {
            at_us: secs * 1_000_000,
            host: host.into(),
            task: None,
            event,
        }
    }

    /// Plan task `n` submitted, created remotely (`r1`, driver data `d1`) and stored as `t1`, all
    /// at 0 s.
    pub(super) fn stored_task(n: u32) -> Vec<Entry> {
        let submit = Seen::SubmitSent {
            n,
            task_id: "t1".into(),
        };
        let created = Seen::RemoteCreated {
            n,
            remote_id: "r1".into(),
            driver_data: "d1".into(),
        };
        let stored = Seen::StoreInsert {
            task_id: "t1".into(),
            outcome: Ok(0),
            dropped: false,
        };
        vec![
            at(0, "user", submit),
            at(0, "mcp", created),
            at(0, "db", stored),
        ]
    }
}
