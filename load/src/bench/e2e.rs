//! Part 1, end to end: N tasks whose remote state turns terminal at their next poll; W engines
//! (core `Engine`, the real `PgStore`, the real `PgLedger` behind `LedgerLauncher`, a runtime
//! that ends runs at once) run until every event is delivered. Events per second = N / wall
//! time; commits per event from `pg_stat_database`, row versions per event from
//! `pg_stat_user_tables`.

use super::server::settled_counts;
use super::{BenchConfig, BenchError, BenchReport, PhaseWrites, Rig};
use crate::bulk::{insert_rows, Mix};
use crate::doubles::done::DoneDriver;
use crate::doubles::runtime::{AgentRuntime, RuntimeFaults};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tasklatch_core::engine::Engine;
use tasklatch_core::ids::{OwnerId, ThreadId};
use tasklatch_core::ledger::LedgerLauncher;
use tasklatch_core::ports::Clock;
use tasklatch_pg::PgLedger;
use tokio::task::JoinHandle;

/// Whether an end-to-end row is still to be polled or has an undelivered version: the static
/// predicates of the poll and notification claim indexes, each half one probe of its index (in
/// the index's order, so the plan cannot turn into a scan of the whole table).
const E2E_WORK_LEFT: &str = "SELECT (SELECT id FROM tasks \
         WHERE remote_status IN ('submitted', 'working', 'input_required') \
           AND cancel_status <> 'requested' AND id LIKE 'e2e-%' \
         ORDER BY poll_next_at, id LIMIT 1) IS NOT NULL \
     OR (SELECT id FROM tasks \
         WHERE notify_status IN ('pending', 'claimed', 'retry', 'dispatched') \
           AND event_version > notified_version AND id LIKE 'e2e-%' \
         ORDER BY notify_due_at, id LIMIT 1) IS NOT NULL";

/// End-to-end rows delivered.
const E2E_DELIVERED: &str =
    "SELECT count(*) FROM tasks WHERE notify_status = 'delivered' AND id LIKE 'e2e-%'";

/// How long the end-to-end part may take.
const E2E_LIMIT: Duration = Duration::from_secs(120);

/// Threads per owner block (row i is on thread i mod threads, of owner i mod 1000).
const OWNERS: u32 = 1_000;

/// Threads created per statement.
const THREAD_CHUNK: usize = 10_000;

/// Runs part 1 and fills its fields of `report`.
pub(super) async fn run(
    rig: &Rig,
    config: &BenchConfig,
    report: &mut BenchReport,
    progress: &mut (impl FnMut(&str) + Send),
) -> Result<(), BenchError> {
    progress(&format!(
        "end to end: {} tasks, {} workers",
        config.tasks, config.workers
    ));
    let n = u64::from(config.tasks);
    seed_rows(rig, config).await?;
    let stop = Arc::new(AtomicBool::new(false));
    let runtime = spawn_runtime(rig, &stop);
    let before = settled_counts(&rig.admin).await?;
    let t0 = Instant::now();
    let workers = spawn_engines(rig, config, &stop);
    let waited = wait_delivered(rig, n, t0).await;
    report.e2e_time = t0.elapsed();
    stop.store(true, Ordering::SeqCst);
    waited?;
    for w in workers {
        let _ = w.await;
    }
    runtime.abort();
    let after = settled_counts(&rig.admin).await?;
    report.e2e_events = n;
    report.e2e_events_per_s = n as f64 / report.e2e_time.as_secs_f64();
    report.e2e_writes = PhaseWrites::between(before, after, n);
    progress(&format!(
        "end to end: {:.0} events/s, {:.2} task-row versions per event ({:.0}% HOT)",
        report.e2e_events_per_s,
        report.e2e_writes.task_versions_per_event(),
        report.e2e_writes.task_hot_percent()
    ));
    Ok(())
}

/// N working rows `e2e-…`, all due a second ago, and their threads in the ledger.
async fn seed_rows(rig: &Rig, config: &BenchConfig) -> Result<(), BenchError> {
    let mix = Mix {
        prefix: "e2e-".into(),
        threads: config.tasks.max(OWNERS).div_ceil(OWNERS) * OWNERS,
        spread: Duration::from_micros(1),
        pollable: 10_000,
        undelivered: 0,
        cancelling: 0,
    };
    let threads: Vec<(OwnerId, ThreadId)> = (0..mix.threads)
        .map(|t| {
            (
                OwnerId(format!("owner-{}", t % OWNERS)),
                ThreadId(format!("thread-{t}")),
            )
        })
        .collect();
    let due = rig.clock.now().minus(Duration::from_secs(1));
    insert_rows(&rig.admin, u64::from(config.tasks), due, mix).await?;
    for chunk in threads.chunks(THREAD_CHUNK) {
        rig.ledger
            .create_threads(chunk, rig.clock.now())
            .await
            .map_err(|e| BenchError(e.0))?;
    }
    Ok(())
}

/// The agent runtime on its own pool, every run a success at once, every 5 ms.
fn spawn_runtime(rig: &Rig, stop: &Arc<AtomicBool>) -> JoinHandle<()> {
    let mut rt = AgentRuntime::new(
        PgLedger::new(rig.runtime_pool.clone()),
        rig.clock.clone(),
        RuntimeFaults::none(),
        1,
    );
    let stop = stop.clone();
    tokio::spawn(async move {
        while !stop.load(Ordering::Relaxed) {
            rt.tick().await;
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
}

/// W engines `bench-{i}`, passes back to back, a 2 ms sleep after a pass that found nothing.
fn spawn_engines(rig: &Rig, config: &BenchConfig, stop: &Arc<AtomicBool>) -> Vec<JoinHandle<()>> {
    (0..config.workers)
        .map(|i| {
            let engine = Engine::new(
                rig.store.clone(),
                DoneDriver,
                LedgerLauncher::new(rig.ledger.clone(), rig.clock.clone()),
                rig.clock.clone(),
                format!("bench-{i}").as_str().into(),
                rig.policy.clone(),
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
        .collect()
}

/// Waits until all `n` rows are delivered, or fails after [`E2E_LIMIT`] from `t0`.
async fn wait_delivered(rig: &Rig, n: u64, t0: Instant) -> Result<(), BenchError> {
    loop {
        tokio::time::sleep(Duration::from_millis(20)).await;
        // Cheap while work is left (one probe of each claim index: a full count every 20 ms
        // took half a core of a 2-core machine away from the engines); the exact count decides.
        let work_left: bool = sqlx::query_scalar(E2E_WORK_LEFT)
            .fetch_one(&rig.admin)
            .await?;
        let timed_out = t0.elapsed() > E2E_LIMIT;
        if work_left && !timed_out {
            continue;
        }
        let delivered: i64 = sqlx::query_scalar(E2E_DELIVERED)
            .fetch_one(&rig.admin)
            .await?;
        if delivered as u64 >= n {
            return Ok(());
        }
        if timed_out {
            return Err(BenchError(format!(
                "end to end did not finish in 120 s ({delivered} of {n} delivered)"
            )));
        }
    }
}
