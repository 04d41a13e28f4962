//! The stress run's world: its connection pools, the parts every engine shares, the engine
//! loops and the simulated agent runtime.

use super::{err, StressError};
use crate::clock::ScaledClock;
use crate::doubles::driver::DriverDouble;
use crate::doubles::launcher::FaultyLauncher;
use crate::doubles::runtime::{AgentRuntime, RuntimeFaults};
use sqlx::PgPool;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tasklatch_core::engine::{Engine, PassReport};
use tasklatch_core::policy::Policy;
use tasklatch_pg::{connect_named, migrate, PgLedger, PgStore, SchemaName};
use tokio::task::JoinHandle;

/// The run's pools, one per role; chaos picks its victims among the store's and the ledger's
/// backends by their application name.
pub(super) struct Pools {
    pub admin: PgPool,
    pub store: PgPool,
    pub ledger: PgPool,
    pub submit: PgPool,
    pub runtime: PgPool,
}

impl Pools {
    /// Connects the admin pool to `admin_url` and migrates the database through it, then every
    /// other pool to `url` (the same database, maybe through a pooler), for `workers` engines.
    pub async fn open(url: &str, admin_url: &str, workers: usize) -> Result<Pools, StressError> {
        let pool = |max, name| connect_named(url, max, name);
        let connect = |e: sqlx::Error| err("connect")(e.to_string());
        let admin = connect_named(admin_url, 3, "tasklatch-admin")
            .await
            .map_err(connect)?;
        migrate(&admin, &SchemaName::default())
            .await
            .map_err(|e| err("migrate")(e.to_string()))?;
        let store_max = u32::try_from(workers).unwrap_or(u32::MAX).saturating_add(4);
        Ok(Pools {
            admin,
            store: pool(store_max, "tasklatch-store").await.map_err(connect)?,
            ledger: pool(16, "tasklatch-ledger").await.map_err(connect)?,
            submit: pool(4, "tasklatch-submit").await.map_err(connect)?,
            runtime: pool(2, "tasklatch-runtime").await.map_err(connect)?,
        })
    }

    /// Closes every pool.
    pub async fn close(&self) {
        for p in [
            &self.admin,
            &self.store,
            &self.ledger,
            &self.submit,
            &self.runtime,
        ] {
            p.close().await;
        }
    }
}

/// An engine of the stress run.
pub(super) type StressEngine = Engine<PgStore, DriverDouble, FaultyLauncher, ScaledClock>;

/// A running engine task and how many times it was restarted.
pub(super) type Worker = (JoinHandle<()>, u32);

/// The engine tasks, shared with chaos (which aborts and restarts them).
pub(super) type Workers = Arc<Mutex<Vec<Worker>>>;

/// What every engine shares, and the run's stop switch and chaos counters.
pub(super) struct Shared {
    pub store: PgStore,
    pub driver: DriverDouble,
    pub launcher: FaultyLauncher,
    pub clock: ScaledClock,
    pub policy: Policy,
    pub stop: AtomicBool,
    pub aborts: AtomicU64,
    pub kills: AtomicU64,
    /// Chaos steps that killed every backend at once (a database restart, as clients see it).
    pub restarts: AtomicU64,
}

impl Shared {
    /// The shared parts, nothing stopped, nothing counted yet.
    pub fn new(
        store: PgStore,
        driver: DriverDouble,
        launcher: FaultyLauncher,
        clock: ScaledClock,
        policy: Policy,
    ) -> Self {
        Shared {
            store,
            driver,
            launcher,
            clock,
            policy,
            stop: AtomicBool::new(false),
            aborts: AtomicU64::new(0),
            kills: AtomicU64::new(0),
            restarts: AtomicU64::new(0),
        }
    }

    /// An engine named `worker` over the shared parts.
    pub fn engine(&self, worker: String) -> StressEngine {
        Engine::new(
            self.store.clone(),
            self.driver.clone(),
            self.launcher.clone(),
            self.clock.clone(),
            worker.as_str().into(),
            self.policy.clone(),
        )
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

fn idle(r: &PassReport) -> bool {
    r.poll.claimed + r.notify.claimed + r.cancel.claimed == 0
}

/// One engine's loop: passes back to back, a short sleep when a pass found nothing.
pub(super) async fn worker_loop(shared: Arc<Shared>, name: String) {
    let engine = shared.engine(name);
    while !shared.stopped() {
        let report = engine.run_once().await;
        if idle(&report) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// Starts `n` engines, named `w{i}.0`.
pub(super) fn spawn_workers(shared: &Arc<Shared>, n: usize) -> Workers {
    Arc::new(Mutex::new(
        (0..n)
            .map(|i| {
                (
                    tokio::spawn(worker_loop(shared.clone(), format!("w{i}.0"))),
                    0,
                )
            })
            .collect(),
    ))
}

/// Starts the agent runtime on its own pool: every 20 ms it schedules new runs and ends the
/// due ones.
pub(super) fn spawn_runtime(
    shared: &Arc<Shared>,
    pool: &PgPool,
    faults: RuntimeFaults,
    seed: u64,
) -> JoinHandle<()> {
    let ledger = PgLedger::new(pool.clone());
    let mut rt = AgentRuntime::new(ledger, shared.clock.clone(), faults, seed);
    let shared = shared.clone();
    tokio::spawn(async move {
        while !shared.stopped() {
            rt.tick().await;
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
}

/// The lock, even if a holder panicked (the data is counters and handles).
pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
