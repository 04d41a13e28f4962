//! The gateway double: the real [`PgLedger`] (coalescing, unless a planted bug is on) behind
//! `LedgerLauncher`, wrapped with fault injection, and a simulated agent runtime that finishes
//! the runs.
//!
//! Faults: launch errors before the run is created and — the nasty one — after it was created
//! (the engine must retry the same key and get the same run); failed run lookups; runs that
//! take long, fail, time out or are interrupted. 409s come from real contention (several tasks
//! per thread), 404s from threads deleted while the test runs.

use super::clock::ScaledClock;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tasklatch_core::ids::{RunId, ThreadId};
use tasklatch_core::ledger::LedgerLauncher;
use tasklatch_core::ports::{Clock, LaunchOutcome, Launcher, RunRequest, RunStatus};
use tasklatch_core::time::Timestamp;
use tasklatch_pg::PgLedger;

/// How often each launcher fault strikes.
#[derive(Clone, Copy, Debug)]
pub struct LaunchFaults {
    /// A launch fails before the ledger is asked.
    pub fail_before: f64,
    /// A launch fails after the ledger created (or found) the run.
    pub fail_after: f64,
    /// A run-status lookup fails.
    pub lookup: f64,
}

impl Default for LaunchFaults {
    fn default() -> Self {
        LaunchFaults {
            fail_before: 0.01,
            fail_after: 0.01,
            lookup: 0.01,
        }
    }
}

/// What the launcher saw (counters).
#[derive(Default, Debug)]
pub struct LaunchCounters {
    /// Launch requests.
    pub requests: AtomicU64,
    /// Runs started or found for a known key.
    pub started: AtomicU64,
    /// 409 busy thread.
    pub busy: AtomicU64,
    /// 404 thread gone.
    pub gone: AtomicU64,
    /// Injected failures before the ledger.
    pub failed_before: AtomicU64,
    /// Injected failures after the ledger created the run.
    pub failed_after: AtomicU64,
    /// Ledger errors (connection killed, …).
    pub ledger_errors: AtomicU64,
    /// Run-status lookups.
    pub lookups: AtomicU64,
    /// Injected lookup failures.
    pub lookup_failures: AtomicU64,
}

/// A fault-injecting [`Launcher`] over the Postgres run ledger. Cheap to clone.
#[derive(Clone)]
pub struct FaultyLauncher {
    inner: Arc<LauncherInner>,
}

struct LauncherInner {
    launcher: LedgerLauncher<PgLedger, ScaledClock>,
    rng: Mutex<ChaCha8Rng>,
    faults: LaunchFaults,
    counters: LaunchCounters,
}

impl FaultyLauncher {
    /// Launches runs in `ledger` stamped with `clock`, injecting `faults` from `seed`.
    pub fn new(ledger: PgLedger, clock: ScaledClock, faults: LaunchFaults, seed: u64) -> Self {
        FaultyLauncher {
            inner: Arc::new(LauncherInner {
                launcher: LedgerLauncher::new(ledger, clock),
                rng: Mutex::new(ChaCha8Rng::seed_from_u64(seed ^ 0x1a_0c4e)),
                faults,
                counters: LaunchCounters::default(),
            }),
        }
    }

    /// The counters.
    pub fn counters(&self) -> &LaunchCounters {
        &self.inner.counters
    }

    fn roll(&self, p: f64) -> bool {
        p > 0.0
            && self
                .inner
                .rng
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .random_bool(p.min(1.0))
    }
}

impl Launcher for FaultyLauncher {
    async fn start_run(&self, req: RunRequest) -> LaunchOutcome {
        let c = &self.inner.counters;
        c.requests.fetch_add(1, Ordering::Relaxed);
        if self.roll(self.inner.faults.fail_before) {
            c.failed_before.fetch_add(1, Ordering::Relaxed);
            return LaunchOutcome::Failed("injected: gateway unavailable".into());
        }
        let after = self.roll(self.inner.faults.fail_after);
        let outcome = self.inner.launcher.start_run(req).await;
        match &outcome {
            LaunchOutcome::Started(_) if after => {
                c.failed_after.fetch_add(1, Ordering::Relaxed);
                return LaunchOutcome::Failed(
                    "injected: gateway timed out after creating the run".into(),
                );
            }
            LaunchOutcome::Started(_) => c.started.fetch_add(1, Ordering::Relaxed),
            LaunchOutcome::Busy => c.busy.fetch_add(1, Ordering::Relaxed),
            LaunchOutcome::ThreadGone => c.gone.fetch_add(1, Ordering::Relaxed),
            LaunchOutcome::Failed(_) => c.ledger_errors.fetch_add(1, Ordering::Relaxed),
        };
        outcome
    }

    async fn run_status(&self, thread: &ThreadId, run: &RunId) -> Result<RunStatus, String> {
        let c = &self.inner.counters;
        c.lookups.fetch_add(1, Ordering::Relaxed);
        if self.roll(self.inner.faults.lookup) {
            c.lookup_failures.fetch_add(1, Ordering::Relaxed);
            return Err("injected: run lookup failed".into());
        }
        self.inner.launcher.run_status(thread, run).await
    }
}

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
