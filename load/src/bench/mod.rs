//! `tasklatch bench`: throughput against the SQL floor, claim latency at a million rows, and
//! throughput under an old snapshot (issue 3, "Benchmark").
//!
//! 1. **End to end**: N tasks whose remote state turns terminal at their next poll; W engines
//!    (core `Engine`, the real [`PgStore`], the real [`PgLedger`] behind `LedgerLauncher` —
//!    coalescing concurrent launches and lookups, as a production gateway would, unless
//!    [`BenchConfig::ledger`] says otherwise — and a runtime that ends runs at once) run until
//!    every event is delivered. Events per second = N / wall time.
//! 2. **SQL floor**, same database, same batch size: the same N rows made pending again, then W
//!    workers do nothing but the notification claim and the completing write.
//! 3. **Claim latency** with one million more rows present (bulk-inserted, most of them
//!    finished): W workers claim and release batches of each kind; p50/p99 per kind, and
//!    `EXPLAIN (ANALYZE, BUFFERS)` of each claim.
//! 4. **Old snapshot**: a poll treadmill (claim, apply a result, due again a second later) for a
//!    baseline, then again while another session holds a `REPEATABLE READ` snapshot open.
//!
//! Durability is the server's own (`fsync`, `synchronous_commit` are reported). Commits per
//! event are measured from `pg_stat_database`: every committed transaction of the bench
//! database, read-only ones (run lookups, empty claims) included; row versions per event from
//! `pg_stat_user_tables` (updates of `tasks` and `runs`, and how many of them were HOT).

pub mod buckets;
mod e2e;
mod floor;
mod latency;
pub mod panel;
mod report;
mod server;
mod snapshot;
pub mod wakeup;

pub use report::{BenchReport, Latency, PhaseWrites};
pub use server::RowWrites;

use crate::clock::ScaledClock;
use sqlx::PgPool;
use std::time::{Duration, Instant};
use tasklatch_core::policy::Policy;
use tasklatch_core::store::{ClaimRequest, Claimed, NotifyWrite};
use tasklatch_core::time::Timestamp;
use tasklatch_core::transitions::outbox::NotifyAction;
use tasklatch_pg::harness::{self, HarnessError, Server, ServerSource, TestDb};
use tasklatch_pg::{connect_named, Coalescing, PgLedger, PgStore};

/// What to measure.
#[derive(Clone, Debug)]
pub struct BenchConfig {
    /// Tasks in the end-to-end run (and the floor).
    pub tasks: u32,
    /// Engines / workers.
    pub workers: usize,
    /// Claim batch size.
    pub batch: usize,
    /// Extra rows for the latency and snapshot parts.
    pub rows: u64,
    /// Seconds per claim kind for the latency part.
    pub latency_secs: u64,
    /// Seconds of treadmill before the snapshot is taken.
    pub baseline_secs: u64,
    /// Seconds the old snapshot is held.
    pub snapshot_secs: u64,
    /// The server to create the bench database on (admin URL); `None`: the test harness's
    /// choice (DATABASE_URL, the local server, a throwaway cluster).
    pub server_url: Option<String>,
    /// How the engines' ledger batches launches and lookups; `None`: one call, one
    /// transaction ([`PgLedger::new`]).
    pub ledger: Option<Coalescing>,
}

impl Default for BenchConfig {
    fn default() -> Self {
        BenchConfig {
            tasks: 20_000,
            workers: 4,
            batch: 64,
            rows: 1_000_000,
            latency_secs: 4,
            baseline_secs: 10,
            snapshot_secs: 60,
            server_url: None,
            ledger: Some(Coalescing::default()),
        }
    }
}

/// Why the bench could not run.
#[derive(Debug, thiserror::Error)]
#[error("bench: {0}")]
pub struct BenchError(pub String);

impl From<sqlx::Error> for BenchError {
    fn from(e: sqlx::Error) -> Self {
        BenchError(e.to_string())
    }
}

impl From<HarnessError> for BenchError {
    fn from(e: HarnessError) -> Self {
        BenchError(e.0)
    }
}

/// The server to create a bench database on: `url` (an admin URL) when given, else the test
/// harness's choice (DATABASE_URL, the local server, or a throwaway cluster).
pub(crate) async fn bench_server(url: Option<&str>) -> Result<Server, BenchError> {
    match url {
        Some(url) => Ok(Server {
            admin_url: url.to_owned(),
            source: ServerSource::Env,
        }),
        None => Ok(harness::server().await?),
    }
}

/// The engines' timings for the bench (real time).
pub fn bench_policy(batch: usize) -> Policy {
    Policy {
        poll_interval: Duration::from_secs(1),
        max_poll_backoff: Duration::from_secs(60),
        poll_lease: Duration::from_secs(30),
        notify_lease: Duration::from_secs(30),
        cancel_lease: Duration::from_secs(30),
        run_check_interval: Duration::from_millis(50),
        run_confirm_wait: Duration::from_millis(160),
        retry_base: Duration::from_millis(100),
        max_retry_backoff: Duration::from_secs(5),
        release_backoff: Duration::from_millis(100),
        min_lease_left: Duration::from_secs(5),
        batch_size: batch,
        max_run_life: Duration::from_secs(60),
        max_clock_skew: Duration::from_secs(2),
        submit_grace: Duration::from_secs(60),
        max_unavailable: Duration::from_secs(24 * 60 * 60),
        max_unavailable_backoff: Duration::from_secs(5),
        outage_probe_interval: Duration::from_secs(30),
    }
}

/// A clock on real time (speed 1), starting at the wall-clock time now.
pub(crate) fn wall_clock() -> ScaledClock {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64);
    ScaledClock::new(Timestamp::from_micros(now), 1)
}

/// A claim request of bench worker `worker`: leases of 30 s, at most `limit` rows.
fn claim_req(worker: usize, now: Timestamp, limit: usize) -> ClaimRequest {
    ClaimRequest {
        worker: format!("bench-{worker}").as_str().into(),
        now,
        lease_for: Duration::from_secs(30),
        limit,
    }
}

/// The notification writes that end every claimed row's run as a success (the bench's stand-in
/// for a delivered run).
fn succeeded(claimed: &[Claimed]) -> Vec<NotifyWrite> {
    claimed
        .iter()
        .map(|c| NotifyWrite {
            task_id: c.row.id().clone(),
            lease: c.lease.clone(),
            dispatch_version: c.row.outbox.dispatch_version,
            action: NotifyAction::RunSucceeded,
        })
        .collect()
}

/// What every part of the bench works with: the database, its pools, the clock, the store and
/// the engines' ledger.
struct Rig {
    url: String,
    admin: PgPool,
    store_pool: PgPool,
    ledger_pool: PgPool,
    runtime_pool: PgPool,
    clock: ScaledClock,
    policy: Policy,
    store: PgStore,
    ledger: PgLedger,
}

impl Rig {
    async fn open(config: &BenchConfig, db: &TestDb) -> Result<Rig, BenchError> {
        let url = db.url();
        let workers = u32::try_from(config.workers).unwrap_or(u32::MAX);
        let admin = connect_named(url, 2, "tasklatch-bench-admin").await?;
        let store_pool = connect_named(url, workers.saturating_add(2), "tasklatch-store").await?;
        let ledger_pool = connect_named(url, 16, "tasklatch-ledger").await?;
        let runtime_pool = connect_named(url, 2, "tasklatch-runtime").await?;
        let policy = bench_policy(config.batch);
        let store = PgStore::new(store_pool.clone(), policy.clone());
        let ledger = match config.ledger {
            Some(c) => PgLedger::coalescing(ledger_pool.clone(), c),
            None => PgLedger::new(ledger_pool.clone()),
        };
        Ok(Rig {
            url: url.to_owned(),
            admin,
            store_pool,
            ledger_pool,
            runtime_pool,
            clock: wall_clock(),
            policy,
            store,
            ledger,
        })
    }

    async fn close(&self) {
        for p in [
            &self.admin,
            &self.store_pool,
            &self.ledger_pool,
            &self.runtime_pool,
        ] {
            p.close().await;
        }
    }
}

/// Runs the benchmark; `progress` gets a line per step.
pub async fn run(
    config: BenchConfig,
    mut progress: impl FnMut(&str) + Send,
) -> Result<BenchReport, BenchError> {
    let started = Instant::now();
    let server = bench_server(config.server_url.as_deref()).await?;
    let db = TestDb::create_on(server.clone()).await?;
    let result = run_on(&config, &db, &server, &mut progress, started).await;
    db.cleanup().await;
    result
}

async fn run_on(
    config: &BenchConfig,
    db: &TestDb,
    server: &Server,
    progress: &mut (impl FnMut(&str) + Send),
    started: Instant,
) -> Result<BenchReport, BenchError> {
    let mut report = BenchReport {
        server: format!(
            "{:?} ({})",
            server.source,
            server::redact_url(&server.admin_url)
        ),
        workers: config.workers,
        batch: config.batch,
        ledger: config.ledger,
        ..Default::default()
    };
    let rig = Rig::open(config, db).await?;
    report.settings = server::settings(&rig.admin).await;
    e2e::run(&rig, config, &mut report, progress).await?;
    floor::run(&rig, config, &mut report, progress).await?;
    latency::run(&rig, config, &mut report, progress).await?;
    snapshot::run(&rig, config, &mut report, progress).await?;
    rig.close().await;
    report.total = started.elapsed();
    Ok(report)
}
