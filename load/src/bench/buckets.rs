//! What owners placed in K buckets cost on one server (issue 27 item 6, "Beyond one primary"):
//! each bucket a tasklatch schema of its own (`bucket_00` … in one database, each migrated with
//! the embedded migrator: `migrate` refuses a second installation in a database), the
//! same work spread over the K buckets against all of it in one schema (`tasklatch`), same
//! server, same database, same run.
//!
//! The work is the SQL floor's (`floor.rs`): N rows with a version to deliver, W workers that
//! only claim notification batches and complete them as delivered until every claim finds
//! nothing. With K buckets the rows are split evenly, and every worker serves every bucket in
//! turn (starting at a bucket of its own), through one pool per bucket — what a worker routing by
//! owner would do with today's store, whose statements name tables unqualified and mean the
//! connection's schema. Each side runs twice, in the order one, K, K, one; the report has the
//! events per second and the claim latencies (p50, p99) of each run.

use super::{claim_req, succeeded, wall_clock, BenchError};
use crate::bulk::{insert_rows, Mix};
use crate::clock::ScaledClock;
use sqlx::postgres::PgConnectOptions;
use sqlx::PgPool;
use std::str::FromStr;
use std::time::{Duration, Instant};
use tasklatch_core::lease::LeaseKind;
use tasklatch_core::ports::Clock;
use tasklatch_core::store::Store;
use tasklatch_pg::harness::{with_database, Server, TestDb};
use tasklatch_pg::{connect_with, migrator, PgStore, SchemaName, SessionSettings};

/// Every row of the pool's `tasks` gets a new version to deliver, due at `$1`.
const MAKE_PENDING_AGAIN: &str = "UPDATE tasks SET event_version = event_version + 1, \
     notify_status = 'pending', notify_due_at = $1, dispatch_event = NULL, run_id = NULL";

/// What to measure.
#[derive(Clone, Debug)]
pub struct BucketsConfig {
    /// Rows in all (split evenly over the buckets).
    pub rows: u64,
    /// Buckets (schemas) on the spread side.
    pub buckets: usize,
    /// Workers.
    pub workers: usize,
    /// Claim batch size.
    pub batch: usize,
}

impl Default for BucketsConfig {
    fn default() -> Self {
        BucketsConfig {
            rows: 40_000,
            buckets: 16,
            workers: 4,
            batch: 64,
        }
    }
}

/// One run: all rows of one side delivered.
#[derive(Clone, Debug)]
pub struct BucketsRun {
    /// Schemas the rows were in.
    pub schemas: usize,
    /// Rows delivered.
    pub events: u64,
    /// Wall time.
    pub elapsed: Duration,
    /// Claims made (empty ones included).
    pub claims: usize,
    /// Claim latency, median.
    pub claim_p50: Duration,
    /// Claim latency, 99th percentile.
    pub claim_p99: Duration,
    /// Connections the side's pools held at the end of the run (one pool per schema).
    pub connections: u32,
}

impl BucketsRun {
    /// Rows delivered per second.
    pub fn events_per_s(&self) -> f64 {
        self.events as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// One line: schemas, connections, events/s, claims, p50 and p99 in milliseconds.
    pub fn line(&self) -> String {
        format!(
            "schemas={:>2} connections={} events={} events_per_s={:.0} claims={} claim_p50_ms={:.2} claim_p99_ms={:.2}",
            self.schemas,
            self.connections,
            self.events,
            self.events_per_s(),
            self.claims,
            self.claim_p50.as_secs_f64() * 1e3,
            self.claim_p99.as_secs_f64() * 1e3
        )
    }
}

/// The two sides, each run twice (order: one, K, K, one).
#[derive(Clone, Debug)]
pub struct BucketsReport {
    /// The runs in the order they ran.
    pub runs: Vec<BucketsRun>,
}

impl BucketsReport {
    /// Events per second of the K-bucket side over the one-schema side, each summed over its
    /// runs (total events / total time).
    pub fn throughput_ratio(&self) -> f64 {
        let rate = |one: bool| {
            let side = self.runs.iter().filter(|r| (r.schemas == 1) == one);
            let (events, secs) = side.fold((0u64, 0f64), |(e, s), r| {
                (e + r.events, s + r.elapsed.as_secs_f64())
            });
            events as f64 / secs.max(1e-9)
        };
        rate(false) / rate(true).max(1e-9)
    }
}

/// One schema's store and pool.
struct Bucket {
    pool: PgPool,
    store: PgStore,
}

/// Runs the measurement (the module's description) in a fresh database on `server`, dropped
/// afterwards; `progress` gets a line per run.
pub async fn run(
    config: &BucketsConfig,
    server: Server,
    mut progress: impl FnMut(&str) + Send,
) -> Result<BucketsReport, BenchError> {
    let db = TestDb::create_on(server).await?;
    let result = measure(config, &db, &mut progress).await;
    db.cleanup().await;
    result
}

async fn measure(
    config: &BucketsConfig,
    db: &TestDb,
    progress: &mut (impl FnMut(&str) + Send),
) -> Result<BucketsReport, BenchError> {
    let url = with_database(db.admin_url(), db.name());
    let k = config.buckets.max(1);
    let one = vec![open_bucket(&url, SchemaName::default(), config).await?];
    let mut spread = Vec::with_capacity(k);
    for i in 0..k {
        let schema = SchemaName::new(&format!("bucket_{i:02}"))
            .map_err(|e| BenchError(format!("bucket_{i:02}: {e}")))?;
        let bucket = open_bucket(&url, schema.clone(), config).await?;
        // `migrate` refuses a second installation in one database (it takes a schema without
        // history beside an installed one for a mistake): the embedded migrator directly.
        let mut conn = bucket.pool.acquire().await?;
        migrator(&schema)
            .run(&mut *conn)
            .await
            .map_err(|e| BenchError(format!("migrate {schema}: {e}")))?;
        drop(conn);
        spread.push(bucket);
    }
    let clock = wall_clock();
    seed(&one, config.rows, &clock).await?;
    seed(&spread, config.rows, &clock).await?;
    let mut runs = Vec::new();
    for side in [&one, &spread, &spread, &one] {
        if !runs.is_empty() {
            pending_again(side, &clock).await?;
        }
        let run = deliver_all(side, config, &clock).await;
        progress(&run.line());
        runs.push(run);
    }
    for b in one.iter().chain(&spread) {
        b.pool.close().await;
    }
    Ok(BucketsReport { runs })
}

/// A pool of `workers` connections in `schema` and its store.
async fn open_bucket(
    url: &str,
    schema: SchemaName,
    config: &BucketsConfig,
) -> Result<Bucket, BenchError> {
    let opts = PgConnectOptions::from_str(url)?.application_name("tasklatch-buckets");
    let session = SessionSettings {
        schema,
        ..SessionSettings::default()
    };
    let max = u32::try_from(config.workers).unwrap_or(u32::MAX);
    let pool = connect_with(opts, max, &session)
        .await
        .map_err(|e| BenchError(e.to_string()))?;
    let store = PgStore::new(pool.clone(), super::bench_policy(config.batch));
    Ok(Bucket { pool, store })
}

/// `rows` rows split evenly over `side`'s buckets, each with a version to deliver, due now.
async fn seed(side: &[Bucket], rows: u64, clock: &ScaledClock) -> Result<(), BenchError> {
    let each = rows / side.len() as u64;
    for b in side {
        let mix = Mix {
            prefix: "bucket-".into(),
            threads: 1_000,
            spread: Duration::from_micros(1),
            pollable: 0,
            undelivered: 10_000,
            cancelling: 0,
        };
        insert_rows(&b.pool, each, clock.now(), mix).await?;
    }
    pending_again(side, clock).await
}

/// Every row of `side` pending again, due now; the tables vacuumed and analysed.
async fn pending_again(side: &[Bucket], clock: &ScaledClock) -> Result<(), BenchError> {
    for b in side {
        sqlx::query(MAKE_PENDING_AGAIN)
            .bind(clock.now().as_micros())
            .execute(&b.pool)
            .await?;
        sqlx::query("VACUUM ANALYZE tasks").execute(&b.pool).await?;
    }
    Ok(())
}

/// W workers deliver every pending row of `side` (the module's loop); the run's figures.
async fn deliver_all(side: &[Bucket], config: &BucketsConfig, clock: &ScaledClock) -> BucketsRun {
    let stores: Vec<PgStore> = side.iter().map(|b| b.store.clone()).collect();
    let t0 = Instant::now();
    let workers: Vec<_> = (0..config.workers.max(1))
        .map(|i| tokio::spawn(worker(stores.clone(), clock.clone(), i, config.batch)))
        .collect();
    let (mut events, mut latencies) = (0u64, Vec::new());
    for w in workers {
        if let Ok((done, mut claims)) = w.await {
            events += done;
            latencies.append(&mut claims);
        }
    }
    let elapsed = t0.elapsed();
    latencies.sort_unstable();
    let at = |q: f64| {
        let i = ((latencies.len() as f64 - 1.0) * q).round().max(0.0) as usize;
        latencies.get(i).copied().unwrap_or_default()
    };
    BucketsRun {
        schemas: side.len(),
        events,
        elapsed,
        claims: latencies.len(),
        claim_p50: at(0.5),
        claim_p99: at(0.99),
        connections: side.iter().map(|b| b.pool.size()).sum(),
    }
}

/// Worker `i`: claims a batch from each bucket in turn (from bucket `i % K` on) and completes it
/// as delivered, until one whole round of claims finds nothing; the rows it completed and each
/// claim's latency. A failed call counts as a claim that found something (it is tried again).
async fn worker(
    stores: Vec<PgStore>,
    clock: ScaledClock,
    i: usize,
    batch: usize,
) -> (u64, Vec<Duration>) {
    let (mut done, mut latencies, mut empty_in_a_row) = (0u64, Vec::new(), 0usize);
    let mut next = i % stores.len().max(1);
    while empty_in_a_row < stores.len() {
        let store = &stores[next];
        next = (next + 1) % stores.len();
        let t = Instant::now();
        let claimed = store
            .claim(LeaseKind::Notify, claim_req(i, clock.now(), batch))
            .await;
        latencies.push(t.elapsed());
        let Ok(claimed) = claimed else {
            empty_in_a_row = 0;
            continue;
        };
        if claimed.is_empty() {
            empty_in_a_row += 1;
            continue;
        }
        empty_in_a_row = 0;
        let writes = succeeded(&claimed);
        if let Ok(out) = store.finish_notifications(writes, clock.now()).await {
            done += out.iter().filter(|o| o.is_ok()).count() as u64;
        }
    }
    (done, latencies)
}
