//! `tasklatch stress`: real concurrency against one Postgres (issue 3, "Real concurrency").
//!
//! W engines (core `Engine`) run on a multi-threaded runtime against one database, with an
//! in-process remote server ([`DriverDouble`](crate::doubles::driver::DriverDouble): tasks move through statuses, some ask for
//! input, all end terminal, some polls fail transiently) and the Postgres run ledger behind
//! `LedgerLauncher` (coalescing concurrent launches and lookups: [`PgLedger::coalescing`]),
//! wrapped with fault injection ([`FaultyLauncher`](crate::doubles::launcher::FaultyLauncher): launch errors before and after
//! the run is created, failed lookups; 409 from real thread contention with several tasks per
//! thread; 404 from threads deleted mid-run) and finished by a simulated agent runtime
//! ([`AgentRuntime`](crate::doubles::runtime::AgentRuntime): slow, failed, timed-out and interrupted runs). Users cancel some
//! tasks. With chaos, engine tasks are aborted mid-call at random times and restarted, and
//! backend connections are killed with `pg_terminate_backend`; chaos stops once every remote
//! task is terminal, and the run ends when every notification has settled.
//!
//! The verdict ([`check`]) comes only from what the doubles recorded. Time is virtual: one
//! shared [`ScaledClock`] runs [`StressConfig::speed`] times faster than real time.

mod chaos;
pub mod check;
mod report;
mod users;
mod watch;
mod world;

pub use report::{Phase, Progress, StressReport};

use crate::clock::ScaledClock;
use crate::doubles::driver::DriverDouble;
use crate::doubles::launcher::{FaultyLauncher, LaunchFaults};
use crate::doubles::runtime::RuntimeFaults;
use chaos::Chaos;
use check::Verdict;
use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tasklatch_core::ids::ThreadId;
use tasklatch_core::ledger::RunLedger;
#[cfg(feature = "mutations")]
use tasklatch_core::mutation::Mutant;
use tasklatch_core::policy::Policy;
use tasklatch_core::time::Timestamp;
use tasklatch_pg::harness::{random_u64, TestDb};
use tasklatch_pg::{Coalescing, PgLedger, PgStore};
use users::{Namespace, Submissions};
use watch::Watched;
use world::{Pools, Shared};

/// Where the virtual clock starts.
const EPOCH_MICROS: i64 = 1_700_000_000_000_000;

/// What to run.
#[derive(Clone, Debug)]
pub struct StressConfig {
    /// Engines.
    pub workers: usize,
    /// Tasks submitted.
    pub tasks: u32,
    /// Abort engines mid-call and kill backend connections.
    pub chaos: bool,
    /// An existing database (migrated if needed; this run's rows are namespaced, nothing is
    /// deleted). `None`: a fresh database on the test server, dropped afterwards.
    pub database_url: Option<String>,
    /// Where the run's own admin pool connects — migrating, chaos's `pg_terminate_backend`,
    /// watching and the verdict — when that must not be `database_url`: a direct URL to the
    /// same database while the engines' pools go through a pooler (so chaos kills the real
    /// server backends behind it). `None`: `database_url` (or the fresh database).
    pub admin_url: Option<String>,
    /// Seeds scripts, faults and chaos.
    pub seed: u64,
    /// Tasks sharing one thread (409 contention).
    pub tasks_per_thread: u32,
    /// Virtual seconds per real second.
    pub speed: u32,
    /// Give up settling after this much real time.
    pub deadline: Duration,
    /// Share of threads deleted while the test runs (404).
    pub deleted_threads: f64,
    /// Share of tasks a user cancels.
    pub cancels: f64,
    /// Share of remote calls that fail transiently.
    pub driver_errors: f64,
    /// Launcher faults.
    pub launch: LaunchFaults,
    /// Agent runtime faults.
    pub runtime: RuntimeFaults,
    /// A planted bug for the store and the ledger (see [`PgStore::with_mutant`] and
    /// [`PgLedger::with_mutant`]): proves the verdict notices.
    #[cfg(feature = "mutations")]
    pub mutant: Option<Mutant>,
}

impl StressConfig {
    /// The default mix for `workers` engines and `tasks` tasks.
    pub fn new(workers: usize, tasks: u32) -> Self {
        StressConfig {
            workers: workers.max(1),
            tasks,
            chaos: false,
            database_url: None,
            admin_url: None,
            seed: 1,
            tasks_per_thread: 4,
            speed: 20,
            deadline: Duration::from_secs(600),
            deleted_threads: 0.01,
            cancels: 0.02,
            driver_errors: 0.01,
            launch: LaunchFaults::default(),
            runtime: RuntimeFaults::default(),
            #[cfg(feature = "mutations")]
            mutant: None,
        }
    }
}

/// The engines' timings, in virtual time.
pub fn stress_policy() -> Policy {
    Policy {
        poll_interval: Duration::from_secs(5),
        max_poll_backoff: Duration::from_secs(120),
        poll_lease: Duration::from_secs(120),
        notify_lease: Duration::from_secs(120),
        cancel_lease: Duration::from_secs(120),
        run_check_interval: Duration::from_secs(3),
        run_confirm_wait: Duration::from_millis(500),
        retry_base: Duration::from_secs(2),
        max_retry_backoff: Duration::from_secs(60),
        release_backoff: Duration::from_secs(4),
        min_lease_left: Duration::from_secs(40),
        batch_size: 64,
        max_run_life: Duration::from_secs(10 * 60),
        // Virtual time runs faster than the database's clock, so the two cannot be compared:
        // the skew guard is off (every engine shares one virtual clock).
        max_clock_skew: Duration::MAX,
        submit_grace: Duration::from_secs(10 * 60),
        max_unavailable: Duration::from_secs(24 * 60 * 60),
        max_unavailable_backoff: Duration::from_secs(60),
        outage_probe_interval: Duration::from_secs(30),
    }
}

/// Why a stress run could not run.
#[derive(Debug, thiserror::Error)]
#[error("stress: {0}")]
pub struct StressError(pub String);

fn err(what: &str) -> impl Fn(String) -> StressError + '_ {
    move |e| StressError(format!("{what}: {e}"))
}

/// Runs a stress test (see the module documentation); `on_progress` is called about once a
/// second. The verdict is in the report; an `Err` means the test could not run at all.
pub async fn run(
    config: StressConfig,
    mut on_progress: impl FnMut(&Progress) + Send,
) -> Result<StressReport, StressError> {
    let (fresh, url) = match &config.database_url {
        Some(url) => (None, url.clone()),
        None => {
            let db = TestDb::try_create().await.map_err(|e| StressError(e.0))?;
            let url = db.url().to_owned();
            (Some(db), url)
        }
    };
    let result = run_on(&config, &url, &mut on_progress).await;
    if let Some(db) = fresh {
        db.cleanup().await;
    }
    result
}

/// The gateway's ledger: coalescing concurrent launches and lookups, as a production one would.
#[cfg(not(feature = "mutations"))]
async fn gateway_ledger(_config: &StressConfig, pools: &Pools) -> Result<PgLedger, StressError> {
    Ok(PgLedger::coalescing(
        pools.ledger.clone(),
        Coalescing::default(),
    ))
}

/// The gateway's ledger: coalescing, as a production one would; a planted-bug run keeps the
/// per-call ledger, where the ledger's planted bug lives.
#[cfg(feature = "mutations")]
async fn gateway_ledger(config: &StressConfig, pools: &Pools) -> Result<PgLedger, StressError> {
    match config.mutant {
        None => Ok(PgLedger::coalescing(
            pools.ledger.clone(),
            Coalescing::default(),
        )),
        Some(m) => PgLedger::with_mutant(pools.ledger.clone(), Some(m))
            .await
            .map_err(|e| err("ledger")(e.to_string())),
    }
}

/// The engines' store.
#[cfg(not(feature = "mutations"))]
fn engine_store(_config: &StressConfig, pools: &Pools, policy: &Policy) -> PgStore {
    PgStore::new(pools.store.clone(), policy.clone())
}

/// The engines' store, with the run's planted bug if any.
#[cfg(feature = "mutations")]
fn engine_store(config: &StressConfig, pools: &Pools, policy: &Policy) -> PgStore {
    PgStore::with_mutant(pools.store.clone(), policy.clone(), config.mutant)
}

async fn run_on(
    config: &StressConfig,
    url: &str,
    on_progress: &mut (impl FnMut(&Progress) + Send),
) -> Result<StressReport, StressError> {
    let admin_url = config.admin_url.as_deref().unwrap_or(url);
    let pools = Pools::open(url, admin_url, config.workers).await?;
    let names = Namespace::new(format!("stress-{:08x}-", random_u64() as u32));
    let clock = ScaledClock::new(Timestamp::from_micros(EPOCH_MICROS), config.speed);
    let policy = stress_policy();
    let driver = DriverDouble::new(clock.clone(), config.seed, config.driver_errors);
    let ledger = gateway_ledger(config, &pools).await?;
    let threads = users::thread_count(config);
    users::create_threads(&ledger, &names, threads, &clock).await?;
    let launcher = FaultyLauncher::new(ledger.clone(), clock.clone(), config.launch, config.seed);
    let store = engine_store(config, &pools, &policy);
    let shared = Arc::new(Shared::new(store, driver, launcher, clock.clone(), policy));
    let started = Instant::now();
    let runtime = world::spawn_runtime(&shared, &pools.runtime, config.runtime, config.seed);
    let workers = world::spawn_workers(&shared, config.workers);
    let deleted = users::delete_some_threads(config, &names, threads, &ledger, &clock);
    let submissions = Submissions::default();
    let submitter = users::spawn_submitter(config, &names, &shared, &pools.submit, &submissions);
    let chaos = Chaos::start(config.chaos, config.seed, &shared, &workers, &pools.admin);
    let watched = Watched {
        admin: &pools.admin,
        shared: &shared,
        submissions: &submissions,
        chaos: &chaos,
        owner_pattern: names.owner_pattern(),
        started,
        deadline: config.deadline,
    };
    let settled_at = watch::until_settled(&watched, on_progress).await;

    // Stop everything, then judge from the doubles' records.
    shared.stop.store(true, Ordering::SeqCst);
    chaos.stop();
    submitter.abort();
    for (h, _) in world::lock(&workers).drain(..) {
        h.abort();
    }
    runtime.abort();
    let elapsed = settled_at.unwrap_or_else(|| started.elapsed());
    let judged = judge(&pools, &names, &shared, &submissions, &deleted).await;
    pools.close().await;
    let (verdict, tasks, runs) = judged?;
    Ok(StressReport {
        events_per_s: verdict.delivered as f64 / elapsed.as_secs_f64().max(1e-9),
        settled: settled_at.is_some(),
        elapsed,
        tasks,
        runs,
        aborts: shared.aborts.load(Ordering::Relaxed),
        kills: shared.kills.load(Ordering::Relaxed),
        restarts: shared.restarts.load(Ordering::Relaxed),
        deleted_threads: deleted.len() as u64,
        cancels: submissions.cancels.load(Ordering::Relaxed),
        launcher: shared.launcher.summary(),
        verdict,
    })
}

/// The verdict from the doubles' records and this run's runs in the ledger; also the tasks
/// persisted and the runs counted.
async fn judge(
    pools: &Pools,
    names: &Namespace,
    shared: &Shared,
    submissions: &Submissions,
    deleted: &HashSet<ThreadId>,
) -> Result<(Verdict, u64, u64), StressError> {
    let ledger = PgLedger::new(pools.admin.clone());
    let runs: Vec<_> = RunLedger::runs(&ledger)
        .await
        .map_err(|e| err("runs")(e.0))?
        .into_iter()
        .filter(|r| names.owns(&r.thread))
        .collect();
    let submitted = world::lock(&submissions.tasks).clone();
    let verdict = check::check(&submitted, &shared.driver.records(), &runs, deleted);
    Ok((verdict, submitted.len() as u64, runs.len() as u64))
}
