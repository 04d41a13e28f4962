//! One mode of the wake-up latency bench on its own database: the worker's lanes (with or
//! without the wake-up listener), the agent runtime that ends runs, and a submitter at a steady
//! rate.

use super::report::LatencyStats;
use super::stamps::{Stamps, Timed};
use super::{Mode, WakeupConfig};
use crate::bench::{bench_policy, wall_clock, BenchError};
use crate::clock::ScaledClock;
use crate::doubles::inline::InlineDriver;
use crate::doubles::runtime::{AgentRuntime, RuntimeFaults};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tasklatch_core::engine::{Engine, SubmitCommand};
use tasklatch_core::ids::{OwnerId, SeededIds, ThreadId};
use tasklatch_core::ledger::LedgerLauncher;
use tasklatch_core::ports::Clock;
use tasklatch_core::store::Scope;
use tasklatch_pg::harness::TestDb;
use tasklatch_pg::{connect_named, PgLedger, PgStore};
use tasklatch_worker::lane::{Heartbeat, Lane};
use tasklatch_worker::metrics::Metrics;
use tasklatch_worker::wakeup::{listen, Waker};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// The owner of every bench thread.
const OWNER: &str = "bench-owner";
/// How long the runs of the last submits may take to start before the mode gives up.
const DRAIN_LIMIT: Duration = Duration::from_secs(30);

/// The lanes' engine: the real store and ledger, inline-finished tasks, timed launches.
type BenchEngine =
    Engine<PgStore, InlineDriver, Timed<LedgerLauncher<PgLedger, ScaledClock>>, ScaledClock>;

/// Measures `mode` on a fresh database.
pub(super) async fn measure(config: &WakeupConfig, mode: Mode) -> Result<LatencyStats, BenchError> {
    let server = crate::bench::bench_server(config.server_url.as_deref()).await?;
    let db = TestDb::create_on(server).await?;
    let result = measure_on(config, mode, &db).await;
    db.cleanup().await;
    result
}

async fn measure_on(
    config: &WakeupConfig,
    mode: Mode,
    db: &TestDb,
) -> Result<LatencyStats, BenchError> {
    let lanes = u32::try_from(config.lanes).unwrap_or(u32::MAX);
    let pool = connect_named(db.url(), lanes.saturating_add(2), "tasklatch-store").await?;
    let ledger_pool = connect_named(db.url(), 4, "tasklatch-ledger").await?;
    let clock = wall_clock();
    let policy = bench_policy(16);
    let store = PgStore::new(pool.clone(), policy.clone());
    let ledger = PgLedger::new(ledger_pool.clone());
    let threads: Vec<(OwnerId, ThreadId)> = (0..config.tasks)
        .map(|i| (OwnerId(OWNER.into()), ThreadId(format!("thread-{i}"))))
        .collect();
    ledger
        .create_threads(&threads, clock.now())
        .await
        .map_err(|e| BenchError(e.0))?;
    let stamps = Stamps::default();
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut tasks = Vec::new();
    let waker = Waker::new(config.lanes);
    if mode == Mode::WakeUps {
        let options = db
            .url()
            .parse()
            .map_err(|e: sqlx::Error| BenchError(e.to_string()))?;
        tasks.push(tokio::spawn(listen(
            options,
            waker.clone(),
            Arc::new(Metrics::new()),
            stop_rx.clone(),
        )));
    }
    tasks.push(spawn_runtime(&ledger_pool, &clock, stop_rx.clone()));
    let engine = |name: String| {
        let launcher = Timed {
            inner: LedgerLauncher::new(ledger.clone(), clock.clone()),
            stamps: stamps.clone(),
        };
        Arc::new(Engine::new(
            store.clone(),
            InlineDriver,
            launcher,
            clock.clone(),
            name.as_str().into(),
            policy.clone(),
        ))
    };
    for i in 0..config.lanes {
        let lane = Lane {
            index: i,
            engine: engine(format!("bench-lane-{i}")),
            wake: waker
                .lane(i)
                .ok_or_else(|| BenchError(format!("no wake-up for lane {i}")))?,
            tick: config.tick,
            metrics: Arc::new(Metrics::new()),
            heartbeat: Arc::new(Heartbeat::default()),
        };
        let (clock, stop) = (clock.clone(), stop_rx.clone());
        tasks.push(tokio::spawn(async move {
            lane.run(&clock, stop).await;
        }));
    }
    let submitted = submit_all(&engine("bench-api".into()), config, &stamps).await;
    let drained = drain(&stamps, config.tasks).await;
    let _ = stop_tx.send(true);
    for t in tasks {
        let _ = t.await;
    }
    pool.close().await;
    ledger_pool.close().await;
    submitted?;
    drained?;
    Ok(LatencyStats::of(stamps.latencies()))
}

/// The agent runtime: ends every run at once, every 5 ms.
fn spawn_runtime(
    pool: &sqlx::PgPool,
    clock: &ScaledClock,
    mut stop: watch::Receiver<bool>,
) -> JoinHandle<()> {
    let mut rt = AgentRuntime::new(
        PgLedger::new(pool.clone()),
        clock.clone(),
        RuntimeFaults::none(),
        1,
    );
    tokio::spawn(async move {
        while !*stop.borrow() {
            rt.tick().await;
            tokio::select! {
                biased;
                _ = stop.changed() => {}
                _ = tokio::time::sleep(Duration::from_millis(5)) => {}
            }
        }
    })
}

/// Submits `config.tasks` tasks, one per thread, at `config.rate` per second.
async fn submit_all(
    api: &BenchEngine,
    config: &WakeupConfig,
    stamps: &Stamps,
) -> Result<(), BenchError> {
    let ids = SeededIds::new(7);
    let every = Duration::from_secs(1) / config.rate;
    let started = Instant::now();
    for i in 0..config.tasks {
        tokio::time::sleep_until((started + every * i).into()).await;
        let cmd = SubmitCommand {
            scope: Scope {
                owner: OwnerId(OWNER.into()),
                thread: ThreadId(format!("thread-{i}")),
            },
            server: "bench".into(),
            name: format!("job-{i}"),
            tool: "inline".into(),
            arguments: "{}".into(),
        };
        let at = Instant::now();
        let id = api
            .submit(&ids, cmd)
            .await
            .map_err(|e| BenchError(format!("submit {i}: {e}")))?;
        stamps.submitting(id.as_str(), at);
    }
    Ok(())
}

/// Waits until every task's run started, or fails after [`DRAIN_LIMIT`].
async fn drain(stamps: &Stamps, tasks: u32) -> Result<(), BenchError> {
    let until = Instant::now() + DRAIN_LIMIT;
    while stamps.started_count() < tasks as usize {
        if Instant::now() > until {
            return Err(BenchError(format!(
                "only {} of {tasks} runs started within {DRAIN_LIMIT:?} of the last submit",
                stamps.started_count()
            )));
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(())
}
