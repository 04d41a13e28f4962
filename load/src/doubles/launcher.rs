//! The gateway double: the real [`PgLedger`] (coalescing, unless a planted bug is on) behind
//! `LedgerLauncher`, wrapped with fault injection.
//!
//! Faults: launch errors before the run is created and — the nasty one — after it was created
//! (the engine must retry the same key and get the same run); failed run lookups. 409s come
//! from real contention (several tasks per thread), 404s from threads deleted while the test
//! runs. The runs themselves are ended by [`super::runtime::AgentRuntime`].

use crate::clock::ScaledClock;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tasklatch_core::ids::{RunId, ThreadId};
use tasklatch_core::ledger::LedgerLauncher;
use tasklatch_core::ports::{LaunchOutcome, Launcher, RunRequest, RunStatus};
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

    /// The counters as one line of `name=value` pairs.
    pub fn summary(&self) -> String {
        let c = &self.inner.counters;
        let n = |a: &AtomicU64| a.load(Ordering::Relaxed);
        format!(
            "requests={} started={} busy409={} gone404={} injected_before={} injected_after={} \
             ledger_errors={} lookups={} lookup_failures={}",
            n(&c.requests),
            n(&c.started),
            n(&c.busy),
            n(&c.gone),
            n(&c.failed_before),
            n(&c.failed_after),
            n(&c.ledger_errors),
            n(&c.lookups),
            n(&c.lookup_failures),
        )
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
            return LaunchOutcome::Unavailable("injected: gateway unavailable".into());
        }
        let after = self.roll(self.inner.faults.fail_after);
        let outcome = self.inner.launcher.start_run(req).await;
        match &outcome {
            LaunchOutcome::Started(_) if after => {
                c.failed_after.fetch_add(1, Ordering::Relaxed);
                return LaunchOutcome::Unavailable(
                    "injected: gateway timed out after creating the run".into(),
                );
            }
            LaunchOutcome::Started(_) => c.started.fetch_add(1, Ordering::Relaxed),
            LaunchOutcome::Busy => c.busy.fetch_add(1, Ordering::Relaxed),
            LaunchOutcome::ThreadGone => c.gone.fetch_add(1, Ordering::Relaxed),
            LaunchOutcome::Failed(_) | LaunchOutcome::Unavailable(_) => {
                c.ledger_errors.fetch_add(1, Ordering::Relaxed)
            }
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
