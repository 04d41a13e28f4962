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
//! database, read-only ones (run lookups, empty claims) included.

use crate::bulk::{insert_rows, Mix};
use crate::stress::clock::ScaledClock;
use crate::stress::launcher::{AgentRuntime, RuntimeFaults};
use sqlx::{Connection, PgConnection, PgPool};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tasklatch_core::engine::Engine;
use tasklatch_core::ids::{OwnerId, ServerId, ThreadId};
use tasklatch_core::lease::LeaseKind;
use tasklatch_core::ledger::LedgerLauncher;
use tasklatch_core::policy::Policy;
use tasklatch_core::ports::{Clock, Driver, DriverError, SubmitRequest, Submitted};
use tasklatch_core::secret::RemoteHandle;
use tasklatch_core::snapshot::{Observed, RemoteReport};
use tasklatch_core::status::RemoteStatus;
use tasklatch_core::store::{ClaimRequest, NotifyWrite, PollWrite, Release, Store};
use tasklatch_core::time::Timestamp;
use tasklatch_core::transitions::outbox::NotifyAction;
use tasklatch_core::transitions::poll;
use tasklatch_pg::connect_named;
use tasklatch_pg::harness::{self, HarnessError, Server, ServerSource, TestDb};
use tasklatch_pg::{claim_candidate_queries, Coalescing, PgLedger, PgStore};

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

/// Latency of one claim kind.
#[derive(Clone, Debug)]
pub struct Latency {
    /// The claim.
    pub kind: LeaseKind,
    /// Claims measured.
    pub samples: usize,
    /// Median.
    pub p50: Duration,
    /// 99th percentile.
    pub p99: Duration,
    /// Worst.
    pub max: Duration,
    /// Rows claimed per claim, on average.
    pub rows_per_claim: f64,
}

/// The results.
#[derive(Clone, Debug, Default)]
pub struct BenchReport {
    /// Events delivered end to end.
    pub e2e_events: u64,
    /// Wall time of the end-to-end run.
    pub e2e_time: Duration,
    /// Events per second end to end.
    pub e2e_events_per_s: f64,
    /// Committed transactions per delivered event (store, ledger and runtime together).
    pub e2e_commits_per_event: f64,
    /// Events per second through the bare claim + complete cycle.
    pub floor_events_per_s: f64,
    /// Commits per event in the floor.
    pub floor_commits_per_event: f64,
    /// Claim latencies at the million-row table.
    pub latency: Vec<Latency>,
    /// `EXPLAIN (ANALYZE, BUFFERS)` of each claim at the million-row table.
    pub explain: Vec<(String, String)>,
    /// Rows in the table for the latency part.
    pub table_rows: u64,
    /// Treadmill rows per second without an old snapshot.
    pub treadmill_baseline: f64,
    /// Treadmill rows per second per 10 s window while the old snapshot is held.
    pub treadmill_windows: Vec<f64>,
    /// Server settings that matter (version, fsync, synchronous_commit, …).
    pub settings: Vec<(String, String)>,
    /// Where the server came from.
    pub server: String,
    /// Total wall time.
    pub total: Duration,
    /// Time to bulk-insert the extra rows.
    pub bulk_time: Duration,
    /// Workers used.
    pub workers: usize,
    /// Claim batch size used.
    pub batch: usize,
    /// How the engines' ledger batched.
    pub ledger: Option<Coalescing>,
}

impl BenchReport {
    /// `e2e / floor`.
    pub fn ratio(&self) -> f64 {
        if self.floor_events_per_s > 0.0 {
            self.e2e_events_per_s / self.floor_events_per_s
        } else {
            0.0
        }
    }

    /// How the end-to-end ledger ran, in words.
    pub fn ledger_mode(&self) -> String {
        match self.ledger {
            Some(c) => format!(
                "coalescing: concurrent launches share one transaction, concurrent lookups one \
                 read (batches of at most {}, {} in flight per kind)",
                c.max_batch, c.leaders
            ),
            None => "one transaction per launch and per lookup".to_owned(),
        }
    }

    /// Short summary lines for the terminal.
    pub fn summary(&self) -> String {
        let mut s = format!(
            "end to end: {:.0} events/s ({} events in {:.2}s, {:.2} commits/event)\n\
             ledger:     {}\n\
             SQL floor:  {:.0} events/s (claim + complete, {:.3} commits/event)\n\
             ratio:      {:.2}\n",
            self.e2e_events_per_s,
            self.e2e_events,
            self.e2e_time.as_secs_f64(),
            self.e2e_commits_per_event,
            self.ledger_mode(),
            self.floor_events_per_s,
            self.floor_commits_per_event,
            self.ratio()
        );
        for l in &self.latency {
            s.push_str(&format!(
                "claim {:<6} at {} rows: p50 {:.2} ms  p99 {:.2} ms  max {:.2} ms  ({} claims, {:.1} rows each)\n",
                l.kind.as_str(),
                self.table_rows,
                ms(l.p50),
                ms(l.p99),
                ms(l.max),
                l.samples,
                l.rows_per_claim
            ));
        }
        let worst = self
            .treadmill_windows
            .iter()
            .copied()
            .fold(f64::INFINITY, f64::min);
        s.push_str(&format!(
            "old snapshot: baseline {:.0} rows/s; while held: {} rows/s (worst {:.0}%)\n",
            self.treadmill_baseline,
            self.treadmill_windows
                .iter()
                .map(|w| format!("{w:.0}"))
                .collect::<Vec<_>>()
                .join(" / "),
            if self.treadmill_baseline > 0.0 && worst.is_finite() {
                100.0 * worst / self.treadmill_baseline
            } else {
                0.0
            }
        ));
        s.push_str(&format!("total {:.1}s\n", self.total.as_secs_f64()));
        s
    }

    /// The report as Markdown, with the command that made it at the top.
    pub fn markdown(&self, command: &str) -> String {
        let mut m = format!(
            "# Benchmark\n\nRegenerate with:\n\n```\n{command}\n```\n\n\
             Machine: {} CPU cores. Server: {}.\n\n",
            std::thread::available_parallelism().map_or(0, |n| n.get()),
            self.server
        );
        m.push_str("| setting | value |\n|---|---|\n");
        for (k, v) in &self.settings {
            m.push_str(&format!("| {k} | {v} |\n"));
        }
        m.push_str(&format!(
            "\n## Throughput\n\n| measure | value |\n|---|---|\n\
             | end to end | **{:.0} events/s** ({} events in {:.2} s) |\n\
             | run ledger, end to end | {} |\n\
             | SQL floor (claim + complete, same batch) | {:.0} events/s |\n\
             | ratio end to end / floor | {:.2} |\n\
             | commits per event, end to end | {:.2} |\n\
             | commits per event, floor | {:.3} |\n\n\
             Commits: every transaction the bench database committed (`pg_stat_database`), \
             read-only ones included.\n",
            self.e2e_events_per_s,
            self.e2e_events,
            self.e2e_time.as_secs_f64(),
            self.ledger_mode(),
            self.floor_events_per_s,
            self.ratio(),
            self.e2e_commits_per_event,
            self.floor_commits_per_event,
        ));
        m.push_str(&format!(
            "\n## Claim latency with {} rows\n\n(bulk insert took {:.1} s)\n\n\
             | claim | claims | rows/claim | p50 | p99 | max |\n|---|---|---|---|---|---|\n",
            self.table_rows,
            self.bulk_time.as_secs_f64()
        ));
        for l in &self.latency {
            m.push_str(&format!(
                "| {} | {} | {:.1} | {:.2} ms | {:.2} ms | {:.2} ms |\n",
                l.kind.as_str(),
                l.samples,
                l.rows_per_claim,
                ms(l.p50),
                ms(l.p99),
                ms(l.max)
            ));
        }
        m.push_str(&format!(
            "\n## Old snapshot\n\nPoll treadmill (claim {} rows, apply a result, due again 1 s later), \
             {} workers. Baseline {:.0} rows/s. While another session holds a REPEATABLE READ \
             snapshot open, per 10 s window:\n\n",
            self.batch, self.workers, self.treadmill_baseline
        ));
        m.push_str("| window | rows/s | % of baseline |\n|---|---|---|\n");
        for (i, w) in self.treadmill_windows.iter().enumerate() {
            m.push_str(&format!(
                "| {}–{} s | {:.0} | {:.0}% |\n",
                i * 10,
                (i + 1) * 10,
                w,
                if self.treadmill_baseline > 0.0 {
                    100.0 * w / self.treadmill_baseline
                } else {
                    0.0
                }
            ));
        }
        m.push_str("\n## EXPLAIN (ANALYZE, BUFFERS) of each claim at the million-row table\n");
        for (kind, plan) in &self.explain {
            m.push_str(&format!("\n### {kind}\n\n```\n{plan}\n```\n"));
        }
        m.push_str(&format!(
            "\nTotal wall time: {:.1} s.\n",
            self.total.as_secs_f64()
        ));
        m
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1_000.0
}

/// Whether an end-to-end row is still to be polled or has an undelivered version: the static
/// predicates of the poll and notification claim indexes, each half one probe of its index (in
/// the index's order, so the plan cannot turn into a scan of the whole table).
const E2E_WORK_LEFT: &str = "SELECT (SELECT id FROM tasks \
         WHERE remote_status IN ('submitted', 'working', 'input_required') \
           AND cancel_requested_at IS NULL AND id LIKE 'e2e-%' \
         ORDER BY poll_next_at, id LIMIT 1) IS NOT NULL \
     OR (SELECT id FROM tasks \
         WHERE notify_status IN ('pending', 'claimed', 'retry', 'dispatched') \
           AND event_version > notified_version AND id LIKE 'e2e-%' \
         ORDER BY notify_due_at, id LIMIT 1) IS NOT NULL";

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

/// The remote server of the bench: every task is completed at its first poll.
#[derive(Clone)]
struct DoneDriver;

impl Driver for DoneDriver {
    async fn submit(&self, _req: &SubmitRequest) -> Result<Submitted, DriverError> {
        Err(DriverError::Rejected("the bench does not submit".into()))
    }

    async fn get_status(
        &self,
        _server: &ServerId,
        handle: &RemoteHandle,
    ) -> Result<RemoteReport, DriverError> {
        Ok(RemoteReport {
            task_id: handle.remote_task_id.expose().to_owned(),
            status: "completed".into(),
            result: Some("{\"ok\":true,\"rows\":42}".into()),
            ..Default::default()
        })
    }

    async fn cancel(
        &self,
        _server: &ServerId,
        handle: &RemoteHandle,
    ) -> Result<RemoteReport, DriverError> {
        Ok(RemoteReport {
            task_id: handle.remote_task_id.expose().to_owned(),
            status: "cancelled".into(),
            ..Default::default()
        })
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
        retry_base: Duration::from_millis(100),
        max_retry_backoff: Duration::from_secs(5),
        release_backoff: Duration::from_millis(100),
        min_lease_left: Duration::from_secs(5),
        batch_size: batch,
    }
}

fn wall_clock() -> ScaledClock {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64);
    ScaledClock::new(Timestamp::from_micros(now), 1)
}

async fn commits(pool: &PgPool) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT (xact_commit)::bigint FROM pg_stat_database WHERE datname = current_database()",
    )
    .fetch_one(pool)
    .await
}

async fn settings(pool: &PgPool) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for name in [
        "server_version",
        "fsync",
        "synchronous_commit",
        "wal_sync_method",
        "full_page_writes",
        "shared_buffers",
        "max_connections",
    ] {
        let v: Result<String, _> = sqlx::query_scalar(sqlx::AssertSqlSafe(format!("SHOW {name}")))
            .fetch_one(pool)
            .await;
        out.push((name.to_owned(), v.unwrap_or_else(|e| format!("? ({e})"))));
    }
    out
}

/// Runs the benchmark; `progress` gets a line per step.
pub async fn run(
    config: BenchConfig,
    mut progress: impl FnMut(&str) + Send,
) -> Result<BenchReport, BenchError> {
    let started = Instant::now();
    let server = match &config.server_url {
        Some(url) => Server {
            admin_url: url.clone(),
            source: ServerSource::Env,
        },
        None => harness::server().await?,
    };
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
        server: format!("{:?} ({})", server.source, redact_url(&server.admin_url)),
        workers: config.workers,
        batch: config.batch,
        ledger: config.ledger,
        ..Default::default()
    };
    let admin = connect_named(db.url(), 2, "tasklatch-bench-admin").await?;
    report.settings = settings(&admin).await;
    let store_pool = connect_named(db.url(), config.workers as u32 + 2, "tasklatch-store").await?;
    let ledger_pool = connect_named(db.url(), 16, "tasklatch-ledger").await?;
    let runtime_pool = connect_named(db.url(), 2, "tasklatch-runtime").await?;
    let clock = wall_clock();
    let policy = bench_policy(config.batch);
    let store = PgStore::new(store_pool.clone(), policy.clone(), None);
    let ledger = match config.ledger {
        Some(c) => PgLedger::coalescing(ledger_pool.clone(), c),
        None => PgLedger::new(ledger_pool.clone(), None)
            .await
            .map_err(|e| BenchError(e.0))?,
    };

    // 1. End to end.
    progress(&format!(
        "end to end: {} tasks, {} workers",
        config.tasks, config.workers
    ));
    let n = u64::from(config.tasks);
    let mix = Mix {
        prefix: "e2e-".into(),
        threads: config.tasks.max(1000).div_ceil(1000) * 1000,
        spread: Duration::from_micros(1),
        pollable: 10_000,
        undelivered: 0,
        cancelling: 0,
    };
    let threads: Vec<(OwnerId, ThreadId)> = (0..mix.threads)
        .map(|t| {
            (
                OwnerId(format!("owner-{}", t % 1000)),
                ThreadId(format!("thread-{t}")),
            )
        })
        .collect();
    insert_rows(&admin, n, clock.now().minus(Duration::from_secs(1)), mix).await?;
    for chunk in threads.chunks(10_000) {
        ledger
            .create_threads(chunk, clock.now())
            .await
            .map_err(|e| BenchError(e.0))?;
    }
    let stop = Arc::new(AtomicBool::new(false));
    let runtime = {
        let mut rt = AgentRuntime::new(
            PgLedger::new(runtime_pool.clone(), None)
                .await
                .map_err(|e| BenchError(e.0))?,
            clock.clone(),
            RuntimeFaults {
                error: 0.0,
                timeout: 0.0,
                interrupted: 0.0,
                slow: 0.0,
                run_secs: (0, 0),
                slow_secs: (0, 0),
            },
            1,
        );
        let stop = stop.clone();
        tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                rt.tick().await;
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
    };
    let commits_before = commits(&admin).await?;
    let t0 = Instant::now();
    let workers: Vec<_> = (0..config.workers)
        .map(|i| {
            let engine = Engine::new(
                store.clone(),
                DoneDriver,
                LedgerLauncher::new(ledger.clone(), clock.clone()),
                clock.clone(),
                format!("bench-{i}").as_str().into(),
                policy.clone(),
            );
            let stop = stop.clone();
            tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    let r = engine.run_once().await;
                    if r.poll.claimed + r.notify.claimed + r.cancel.claimed == 0 {
                        tokio::time::sleep(Duration::from_millis(2)).await;
                    }
                }
            })
        })
        .collect();
    loop {
        tokio::time::sleep(Duration::from_millis(20)).await;
        // Cheap while work is left (one probe of each claim index: a full count every 20 ms
        // took half a core of a 2-core machine away from the engines); the exact count decides.
        let work_left: bool = sqlx::query_scalar(E2E_WORK_LEFT).fetch_one(&admin).await?;
        let timed_out = t0.elapsed() > Duration::from_secs(120);
        if work_left && !timed_out {
            continue;
        }
        let delivered: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM tasks WHERE notify_status = 'delivered' AND id LIKE 'e2e-%'",
        )
        .fetch_one(&admin)
        .await?;
        if delivered as u64 >= n {
            break;
        }
        if timed_out {
            stop.store(true, Ordering::SeqCst);
            return Err(BenchError(format!(
                "end to end did not finish in 120 s ({delivered} of {n} delivered)"
            )));
        }
    }
    report.e2e_time = t0.elapsed();
    stop.store(true, Ordering::SeqCst);
    for w in workers {
        let _ = w.await;
    }
    runtime.abort();
    let commits_after = commits(&admin).await?;
    report.e2e_events = n;
    report.e2e_events_per_s = n as f64 / report.e2e_time.as_secs_f64();
    report.e2e_commits_per_event = (commits_after - commits_before) as f64 / n as f64;
    progress(&format!(
        "end to end: {:.0} events/s",
        report.e2e_events_per_s
    ));

    // 2. The SQL floor: the same rows pending again; claim + complete only.
    sqlx::query(
        "UPDATE tasks SET event_version = event_version + 1, notify_status = 'pending', \
         notify_due_at = $1, dispatch_event = NULL, run_id = NULL WHERE id LIKE 'e2e-%'",
    )
    .bind(clock.now().as_micros())
    .execute(&admin)
    .await?;
    sqlx::query("VACUUM ANALYZE tasks").execute(&admin).await?;
    let commits_before = commits(&admin).await?;
    let t0 = Instant::now();
    let done = Arc::new(AtomicU64::new(0));
    let floor: Vec<_> = (0..config.workers)
        .map(|i| {
            let (store, clock, done) = (store.clone(), clock.clone(), done.clone());
            let batch = config.batch;
            tokio::spawn(async move {
                loop {
                    let now = clock.now();
                    let claimed = match store
                        .claim(LeaseKind::Notify, claim_req(i, now, batch))
                        .await
                    {
                        Ok(c) => c,
                        Err(_) => continue,
                    };
                    if claimed.is_empty() {
                        return;
                    }
                    let writes: Vec<NotifyWrite> = claimed
                        .iter()
                        .map(|c| NotifyWrite {
                            task_id: c.row.id().clone(),
                            lease: c.lease.clone(),
                            dispatch_version: c.row.outbox.dispatch_version,
                            action: NotifyAction::RunSucceeded,
                        })
                        .collect();
                    if let Ok(out) = store.finish_notifications(writes, clock.now()).await {
                        done.fetch_add(
                            out.iter().filter(|o| o.is_ok()).count() as u64,
                            Ordering::Relaxed,
                        );
                    }
                }
            })
        })
        .collect();
    for f in floor {
        let _ = f.await;
    }
    let floor_time = t0.elapsed();
    let floor_done = done.load(Ordering::Relaxed).max(1);
    report.floor_events_per_s = floor_done as f64 / floor_time.as_secs_f64();
    report.floor_commits_per_event =
        (commits(&admin).await? - commits_before) as f64 / floor_done as f64;
    progress(&format!(
        "SQL floor: {:.0} events/s (ratio {:.2})",
        report.floor_events_per_s,
        report.ratio()
    ));

    // 3. One million rows; claim latency per kind.
    progress(&format!("inserting {} rows", config.rows));
    let t0 = Instant::now();
    insert_rows(
        &admin,
        config.rows,
        clock.now().minus(Duration::from_secs(1_800)),
        Mix::default(),
    )
    .await?;
    report.bulk_time = t0.elapsed();
    report.table_rows = sqlx::query_scalar::<_, i64>("SELECT count(*) FROM tasks")
        .fetch_one(&admin)
        .await? as u64;
    progress(&format!(
        "{} rows in the table (bulk insert {:.1}s)",
        report.table_rows,
        report.bulk_time.as_secs_f64()
    ));
    for kind in LeaseKind::ALL {
        let l = claim_latency(&store, &clock, kind, config).await;
        progress(&format!(
            "claim {}: p50 {:.2} ms, p99 {:.2} ms",
            kind.as_str(),
            ms(l.p50),
            ms(l.p99)
        ));
        report.latency.push(l);
    }
    let mut conn = PgConnection::connect(db.url()).await?;
    for (kind, sql) in claim_candidate_queries() {
        let rows: Vec<(String,)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "EXPLAIN (ANALYZE, BUFFERS) {sql} FOR UPDATE SKIP LOCKED"
        )))
        .bind(clock.now().as_micros())
        .bind(config.batch as i64)
        .fetch_all(&mut conn)
        .await?;
        report.explain.push((
            kind.to_owned(),
            rows.into_iter()
                .map(|(l,)| l)
                .collect::<Vec<_>>()
                .join("\n"),
        ));
    }

    // 4. The poll treadmill, then the same with an old snapshot held.
    progress(&format!(
        "treadmill baseline {} s, then {} s with an old snapshot",
        config.baseline_secs, config.snapshot_secs
    ));
    let windows = Arc::new(Mutex::new(Vec::new()));
    let counter = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let treadmill: Vec<_> = (0..config.workers)
        .map(|i| {
            let (store, clock, counter, stop) =
                (store.clone(), clock.clone(), counter.clone(), stop.clone());
            let (batch, policy) = (config.batch, policy.clone());
            tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    let now = clock.now();
                    let Ok(claimed) = store.claim(LeaseKind::Poll, claim_req(i, now, batch)).await
                    else {
                        continue;
                    };
                    if claimed.is_empty() {
                        tokio::time::sleep(Duration::from_millis(5)).await;
                        continue;
                    }
                    let at = clock.now();
                    let writes: Vec<PollWrite> = claimed
                        .iter()
                        .map(|c| PollWrite {
                            task_id: c.row.id().clone(),
                            lease: c.lease.clone(),
                            completed_at: at,
                            update: poll::on_report(&c.row, Ok(working()), at, &policy),
                        })
                        .collect();
                    if let Ok(out) = store.apply_polls(writes, at).await {
                        counter.fetch_add(
                            out.iter().filter(|o| o.is_ok()).count() as u64,
                            Ordering::Relaxed,
                        );
                    }
                }
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let c0 = counter.load(Ordering::Relaxed);
    tokio::time::sleep(Duration::from_secs(config.baseline_secs.max(1))).await;
    report.treadmill_baseline =
        (counter.load(Ordering::Relaxed) - c0) as f64 / config.baseline_secs.max(1) as f64;
    progress(&format!(
        "treadmill baseline {:.0} rows/s; holding a snapshot",
        report.treadmill_baseline
    ));
    let mut snap = PgConnection::connect(db.url()).await?;
    sqlx::raw_sql("BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT count(*) FROM threads;")
        .execute(&mut snap)
        .await?;
    let windows_n = config.snapshot_secs.div_ceil(10).max(1);
    for w in 0..windows_n {
        let secs = (config.snapshot_secs - w * 10).clamp(1, 10);
        let c0 = counter.load(Ordering::Relaxed);
        tokio::time::sleep(Duration::from_secs(secs)).await;
        let rate = (counter.load(Ordering::Relaxed) - c0) as f64 / secs as f64;
        progress(&format!(
            "  snapshot held, window {}: {rate:.0} rows/s",
            w + 1
        ));
        windows.lock().unwrap_or_else(|p| p.into_inner()).push(rate);
    }
    sqlx::raw_sql("COMMIT").execute(&mut snap).await?;
    stop.store(true, Ordering::SeqCst);
    for t in treadmill {
        let _ = t.await;
    }
    report.treadmill_windows = windows.lock().unwrap_or_else(|p| p.into_inner()).clone();
    for p in [&admin, &store_pool, &ledger_pool, &runtime_pool] {
        p.close().await;
    }
    report.total = started.elapsed();
    Ok(report)
}

fn working() -> Observed {
    Observed {
        status: RemoteStatus::Working,
        result: None,
        result_truncated: false,
        artifact: None,
        error: None,
        input_request: None,
        poll_hint: Some(Duration::ZERO),
    }
}

fn claim_req(worker: usize, now: Timestamp, limit: usize) -> ClaimRequest {
    ClaimRequest {
        worker: format!("bench-{worker}").as_str().into(),
        now,
        lease_for: Duration::from_secs(30),
        limit,
    }
}

/// W workers claim batches of `kind` for `latency_secs`, releasing each batch due again at once;
/// the claims' latencies.
async fn claim_latency(
    store: &PgStore,
    clock: &ScaledClock,
    kind: LeaseKind,
    config: &BenchConfig,
) -> Latency {
    let samples = Arc::new(Mutex::new(Vec::new()));
    let rows = Arc::new(AtomicU64::new(0));
    let until = Instant::now() + Duration::from_secs(config.latency_secs.max(1));
    let tasks: Vec<_> = (0..config.workers)
        .map(|i| {
            let (store, clock, samples, rows) =
                (store.clone(), clock.clone(), samples.clone(), rows.clone());
            let batch = config.batch;
            tokio::spawn(async move {
                while Instant::now() < until {
                    let now = clock.now();
                    let t0 = Instant::now();
                    let Ok(claimed) = store.claim(kind, claim_req(i, now, batch)).await else {
                        continue;
                    };
                    let took = t0.elapsed();
                    samples.lock().unwrap_or_else(|p| p.into_inner()).push(took);
                    rows.fetch_add(claimed.len() as u64, Ordering::Relaxed);
                    let releases: Vec<Release> = claimed
                        .iter()
                        .map(|c| Release {
                            task_id: c.row.id().clone(),
                            lease: c.lease.clone(),
                            retry_at: clock.now(),
                            error: None,
                        })
                        .collect();
                    if !releases.is_empty() {
                        let _ = store.release(kind, releases, clock.now()).await;
                    }
                }
            })
        })
        .collect();
    for t in tasks {
        let _ = t.await;
    }
    let mut s = samples.lock().unwrap_or_else(|p| p.into_inner()).clone();
    s.sort();
    let pick = |q: f64| {
        s.get(((s.len() as f64 - 1.0) * q).round() as usize)
            .copied()
            .unwrap_or_default()
    };
    Latency {
        kind,
        samples: s.len(),
        p50: pick(0.50),
        p99: pick(0.99),
        max: s.last().copied().unwrap_or_default(),
        rows_per_claim: rows.load(Ordering::Relaxed) as f64 / s.len().max(1) as f64,
    }
}

/// A URL without its password.
fn redact_url(url: &str) -> String {
    match (url.find("://"), url.find('@')) {
        (Some(s), Some(at)) if at > s => {
            let creds = &url[s + 3..at];
            match creds.find(':') {
                Some(c) => format!("{}{}:***{}", &url[..s + 3], &creds[..c], &url[at..]),
                None => url.to_owned(),
            }
        }
        _ => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_lose_their_password() {
        assert_eq!(
            redact_url("postgres://u:secret@h:1/db"),
            "postgres://u:***@h:1/db"
        );
        assert_eq!(redact_url("postgres://u@h/db"), "postgres://u@h/db");
    }
}
