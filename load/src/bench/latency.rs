//! Part 3, claim latency at a million rows: the rows are bulk-inserted (most of them finished),
//! then W workers claim and release batches of each kind; p50/p99 per kind, and
//! `EXPLAIN (ANALYZE, BUFFERS)` of each claim's candidate query.

use super::report::ms;
use super::{claim_req, BenchConfig, BenchError, BenchReport, Latency, Rig};
use crate::bulk::{insert_rows, Mix};
use crate::clock::ScaledClock;
use sqlx::{Connection, PgConnection};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tasklatch_core::lease::LeaseKind;
use tasklatch_core::ports::Clock;
use tasklatch_core::store::{Release, Store};
use tasklatch_pg::{claim_candidate_queries, PgStore};

/// Runs part 3 and fills its fields of `report`.
pub(super) async fn run(
    rig: &Rig,
    config: &BenchConfig,
    report: &mut BenchReport,
    progress: &mut (impl FnMut(&str) + Send),
) -> Result<(), BenchError> {
    progress(&format!("inserting {} rows", config.rows));
    let t0 = Instant::now();
    let due = rig.clock.now().minus(Duration::from_secs(1_800));
    insert_rows(&rig.admin, config.rows, due, Mix::default()).await?;
    report.bulk_time = t0.elapsed();
    report.table_rows = sqlx::query_scalar::<_, i64>("SELECT count(*) FROM tasks")
        .fetch_one(&rig.admin)
        .await? as u64;
    progress(&format!(
        "{} rows in the table (bulk insert {:.1}s)",
        report.table_rows,
        report.bulk_time.as_secs_f64()
    ));
    for kind in LeaseKind::ALL {
        let l = claim_latency(&rig.store, &rig.clock, kind, config).await;
        progress(&format!(
            "claim {}: p50 {:.2} ms, p99 {:.2} ms",
            kind.as_str(),
            ms(l.p50),
            ms(l.p99)
        ));
        report.latency.push(l);
    }
    report.explain = explain(rig, config).await?;
    Ok(())
}

/// `EXPLAIN (ANALYZE, BUFFERS)` of each claim's candidate query, locking as the claim does.
async fn explain(rig: &Rig, config: &BenchConfig) -> Result<Vec<(String, String)>, BenchError> {
    let mut conn = PgConnection::connect(&rig.url).await?;
    let mut plans = Vec::new();
    for (kind, sql) in claim_candidate_queries() {
        let rows: Vec<(String,)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "EXPLAIN (ANALYZE, BUFFERS) {sql} FOR UPDATE SKIP LOCKED"
        )))
        .bind(rig.clock.now().as_micros())
        .bind(config.batch as i64)
        .fetch_all(&mut conn)
        .await?;
        plans.push((
            kind.to_owned(),
            rows.into_iter()
                .map(|(l,)| l)
                .collect::<Vec<_>>()
                .join("\n"),
        ));
    }
    Ok(plans)
}

/// What the latency workers record.
#[derive(Default)]
struct Samples {
    took: Mutex<Vec<Duration>>,
    rows: AtomicU64,
}

/// W workers claim batches of `kind` for `latency_secs`, releasing each batch due again at once;
/// the claims' latencies.
async fn claim_latency(
    store: &PgStore,
    clock: &ScaledClock,
    kind: LeaseKind,
    config: &BenchConfig,
) -> Latency {
    let samples = Arc::new(Samples::default());
    let until = Instant::now() + Duration::from_secs(config.latency_secs.max(1));
    let tasks: Vec<_> = (0..config.workers)
        .map(|i| {
            let (store, clock, samples) = (store.clone(), clock.clone(), samples.clone());
            let batch = config.batch;
            tokio::spawn(async move {
                while Instant::now() < until {
                    claim_and_release(&store, &clock, kind, i, batch, &samples).await;
                }
            })
        })
        .collect();
    for t in tasks {
        let _ = t.await;
    }
    let mut s = samples
        .took
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
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
        rows_per_claim: samples.rows.load(Ordering::Relaxed) as f64 / s.len().max(1) as f64,
    }
}

/// One timed claim of worker `i`; the claimed rows are released due at once.
async fn claim_and_release(
    store: &PgStore,
    clock: &ScaledClock,
    kind: LeaseKind,
    i: usize,
    batch: usize,
    samples: &Samples,
) {
    let now = clock.now();
    let t0 = Instant::now();
    let Ok(claimed) = store.claim(kind, claim_req(i, now, batch)).await else {
        return;
    };
    let took = t0.elapsed();
    samples
        .took
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(took);
    samples
        .rows
        .fetch_add(claimed.len() as u64, Ordering::Relaxed);
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
