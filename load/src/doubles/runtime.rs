//! The simulated agent runtime: picks up every active run from the ledger and ends it after a
//! while with a seeded outcome — slow, failed, timed-out and interrupted runs included.

use crate::clock::ScaledClock;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::HashMap;
use std::time::Duration;
use tasklatch_core::ids::RunId;
use tasklatch_core::ports::{Clock, RunStatus};
use tasklatch_core::time::Timestamp;
use tasklatch_pg::PgLedger;

/// How the simulated agent runtime ends runs.
#[derive(Clone, Copy, Debug)]
pub struct RuntimeFaults {
    /// Runs that end with an error.
    pub error: f64,
    /// Runs that time out.
    pub timeout: f64,
    /// Runs that are interrupted.
    pub interrupted: f64,
    /// Runs that take long ([`RuntimeFaults::slow_secs`] instead of [`RuntimeFaults::run_secs`]).
    pub slow: f64,
    /// How long a run takes, in virtual seconds (inclusive range).
    pub run_secs: (u64, u64),
    /// How long a slow run takes, in virtual seconds (inclusive range).
    pub slow_secs: (u64, u64),
}

impl RuntimeFaults {
    /// Every run succeeds at once (the bench's runtime).
    pub fn none() -> Self {
        RuntimeFaults {
            error: 0.0,
            timeout: 0.0,
            interrupted: 0.0,
            slow: 0.0,
            run_secs: (0, 0),
            slow_secs: (0, 0),
        }
    }
}

impl Default for RuntimeFaults {
    fn default() -> Self {
        RuntimeFaults {
            error: 0.01,
            timeout: 0.005,
            interrupted: 0.005,
            slow: 0.05,
            run_secs: (1, 8),
            slow_secs: (20, 60),
        }
    }
}

/// The simulated agent runtime: picks up every active run from the ledger (its source of
/// truth, so runs created by a launch whose caller was aborted are finished too) and ends it
/// after a while with a seeded outcome.
pub struct AgentRuntime {
    ledger: PgLedger,
    clock: ScaledClock,
    faults: RuntimeFaults,
    rng: ChaCha8Rng,
    scheduled: HashMap<RunId, (Timestamp, RunStatus)>,
    /// Runs ended so far, per status.
    pub ended: HashMap<RunStatus, u64>,
}

impl AgentRuntime {
    /// A runtime over `ledger`.
    pub fn new(ledger: PgLedger, clock: ScaledClock, faults: RuntimeFaults, seed: u64) -> Self {
        AgentRuntime {
            ledger,
            clock,
            faults,
            rng: ChaCha8Rng::seed_from_u64(seed ^ 0xa9e47),
            scheduled: HashMap::new(),
            ended: HashMap::new(),
        }
    }

    /// One pass: schedule new runs, end the due ones. Errors (a killed connection) are left
    /// for the next pass.
    pub async fn tick(&mut self) {
        let Ok(active) = self.ledger.active_runs(10_000).await else {
            return;
        };
        let f = self.faults;
        for (run, created) in active {
            if self.scheduled.contains_key(&run) {
                continue;
            }
            let (lo, hi) = if f.slow > 0.0 && self.rng.random_bool(f.slow.min(1.0)) {
                f.slow_secs
            } else {
                f.run_secs
            };
            let secs = self.rng.random_range(lo..=hi.max(lo));
            let roll: f64 = self.rng.random();
            let status = if roll < f.error {
                RunStatus::Error
            } else if roll < f.error + f.timeout {
                RunStatus::Timeout
            } else if roll < f.error + f.timeout + f.interrupted {
                RunStatus::Interrupted
            } else {
                RunStatus::Success
            };
            self.scheduled
                .insert(run, (created.plus(Duration::from_secs(secs)), status));
        }
        let now = self.clock.now();
        let due: Vec<(RunId, RunStatus)> = self
            .scheduled
            .iter()
            .filter(|(_, (at, _))| *at <= now)
            .map(|(r, (_, s))| (r.clone(), *s))
            .collect();
        if due.is_empty() {
            return;
        }
        if self.ledger.finish_runs(&due, now).await.is_ok() {
            for (run, status) in due {
                self.scheduled.remove(&run);
                *self.ended.entry(status).or_insert(0) += 1;
            }
        }
    }
}
