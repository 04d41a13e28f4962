//! What every host of one run shares: the plan, the history, the timings, and which faults
//! have fired. Hosts read faults from the plan by simulated time; nothing here is random.

use crate::history::{History, Seen};
use crate::plan::fault::{Fault, FaultKind};
use crate::plan::timing::{sim_policy, sim_timeouts, Timeouts, EPOCH_SECS};
use crate::plan::Feature;
use crate::plan::Plan;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;
use tasklatch_core::policy::Policy;
use tasklatch_core::time::Timestamp;

/// Shared by all hosts of one run.
pub struct Ctx {
    /// The plan being run.
    pub plan: Plan,
    /// The history being recorded.
    pub history: History,
    /// The engines' timings.
    pub policy: Policy,
    /// Client call deadlines.
    pub timeouts: Timeouts,
    fired: Mutex<BTreeSet<usize>>,
    exercised: Mutex<BTreeSet<(Feature, Option<String>)>>,
    user_done: AtomicBool,
    clock_steps: Mutex<Vec<ClockStep>>,
}

/// A worker's wall clock stepped back `back_ms` from `from_ms` until `until_ms` (simulated).
#[derive(Clone, Copy)]
struct ClockStep {
    worker: u32,
    from_ms: u64,
    until_ms: u64,
    back_ms: u64,
}

impl Ctx {
    /// The context of a run of `plan`.
    pub fn new(plan: Plan) -> Self {
        Ctx {
            plan,
            history: History::new(),
            policy: sim_policy(),
            timeouts: sim_timeouts(),
            fired: Mutex::new(BTreeSet::new()),
            exercised: Mutex::new(BTreeSet::new()),
            user_done: AtomicBool::new(false),
            clock_steps: Mutex::new(Vec::new()),
        }
    }

    /// Whether `t_ms` is in the chaos phase (faults apply only then).
    pub fn in_chaos(&self, t_ms: u64) -> bool {
        t_ms < self.plan.chaos_ms
    }

    /// Faults active at `t_ms` whose kind `pick` accepts, with their indexes.
    pub fn active<'a, T>(
        &'a self,
        t_ms: u64,
        pick: impl Fn(&FaultKind) -> Option<T> + 'a,
    ) -> impl Iterator<Item = (usize, T)> + 'a {
        let chaos = self.in_chaos(t_ms);
        self.plan
            .faults
            .iter()
            .enumerate()
            .filter(move |(_, f)| chaos && f.active(t_ms))
            .filter_map(move |(i, f)| pick(&f.kind).map(|t| (i, t)))
    }

    /// The plan's faults.
    pub fn faults(&self) -> &[Fault] {
        &self.plan.faults
    }

    /// Records, once, that fault `index` took effect (seen by `host`); true the first time.
    pub fn fire(&self, index: usize, host: &str) -> bool {
        self.fire_at(index, host, crate::history::now_us())
    }

    /// [`Ctx::fire`] at an explicit time (for the world itself, outside any host).
    pub fn fire_at(&self, index: usize, host: &str, at_us: u64) -> bool {
        let first = self
            .fired
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(index);
        if first {
            self.history
                .record_at(at_us, host, None, Seen::FaultFired { index });
        }
        first
    }

    /// Records, once per (kind, task), that a workload feature took effect.
    pub fn exercised(&self, what: impl Into<Feature>, host: &str, task: Option<String>) {
        let what = what.into();
        let first = self
            .exercised
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert((what, task.clone()));
        if first {
            self.history.record(host, task, Seen::Exercised { what });
        }
    }

    /// Steps `worker`'s wall clock back `back_ms` from `from_ms` until `until_ms`.
    pub fn step_clock_back(&self, worker: u32, from_ms: u64, until_ms: u64, back_ms: u64) {
        assert!(from_ms < until_ms, "a clock step must last");
        self.clock_steps
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(ClockStep {
                worker,
                from_ms,
                until_ms,
                back_ms,
            });
    }

    /// How far `worker`'s wall clock is stepped back at `t_ms`, in milliseconds.
    pub fn clock_stepped_back(&self, worker: u32, t_ms: u64) -> u64 {
        self.clock_steps
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .filter(|s| s.worker == worker && (s.from_ms..s.until_ms).contains(&t_ms))
            .map(|s| s.back_ms)
            .sum()
    }

    /// The user host finished its actions.
    pub fn set_user_done(&self) {
        self.user_done.store(true, Ordering::SeqCst);
    }

    /// Whether the user host finished its actions.
    pub fn user_done(&self) -> bool {
        self.user_done.load(Ordering::SeqCst)
    }
}

/// Simulated milliseconds since the start (inside a host).
pub fn now_ms() -> u64 {
    turmoil::sim_elapsed().map_or(0, |d| d.as_millis() as u64)
}

/// The engine time of simulated instant `elapsed` shifted by `skew_ms`.
pub fn timestamp(elapsed: Duration, skew_ms: i64) -> Timestamp {
    let micros = (EPOCH_SECS as i64) * 1_000_000 + elapsed.as_micros() as i64 + skew_ms * 1_000;
    Timestamp::from_micros(micros)
}
