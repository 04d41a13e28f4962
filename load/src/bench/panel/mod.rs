//! `tasklatch bench --panel`: how fast a change reaches an open background-task panel, and
//! what the open panels cost the database (issue 26: p99 ≤ 1 s over 100 changes; the load of
//! 100 open panels measured and stated).
//!
//! One database, the worker's real router with the panel on and its one listener
//! ([`site`]), and three phases at the same rate of changes (each change a submit, answered
//! inline by the remote double, into the next owner's thread in turn):
//!
//! 1. **No panel open**: the changes alone — the baseline of the database's work.
//! 2. **Panels open, idle**: `panels` viewers ([`viewer`], the script's behaviour) hold their
//!    push streams open for `idle` with no change: what open panels cost while nothing happens.
//! 3. **Panels open, changing**: the same number of changes again; each one's latency runs
//!    from the submit's acknowledgement (after its commit) to the first page of that thread's
//!    panel that shows the task. Minus the baseline, the database's work is the panels' own.
//!
//! The database's work is read from `pg_stat_database` (transactions and rows read), after
//! waiting for every backend to report (see `server::STATS_SETTLE`).

mod report;
mod site;
mod viewer;

pub use report::{DbWork, PanelReport};

use super::server::STATS_SETTLE;
use super::wakeup::LatencyStats;
use super::BenchError;
use site::{owner, Site, SERVER};
use sqlx::PgPool;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use tasklatch_core::engine::SubmitCommand;
use tasklatch_core::ids::SeededIds;
use tasklatch_core::store::Scope;
use tasklatch_pg::connect_named;
use tasklatch_pg::harness::TestDb;
use tokio::sync::watch;
use viewer::Viewer;

/// What to measure.
#[derive(Clone, Debug)]
pub struct PanelConfig {
    /// Panels open at once, one per owner and thread.
    pub panels: usize,
    /// Changes per phase.
    pub changes: u32,
    /// Changes per second.
    pub rate: u32,
    /// How long the open panels sit idle.
    pub idle: Duration,
    /// The server to create the bench database on; `None`: the test harness's choice.
    pub server_url: Option<String>,
}

impl Default for PanelConfig {
    fn default() -> Self {
        PanelConfig {
            panels: 100,
            changes: 100,
            rate: 5,
            idle: Duration::from_secs(20),
            server_url: None,
        }
    }
}

/// How long the last change may take to show before the bench gives up on it.
const SHOW_LIMIT: Duration = Duration::from_secs(30);

/// Runs the three phases; `progress` gets a line per step.
pub async fn run(
    config: PanelConfig,
    mut progress: impl FnMut(&str) + Send,
) -> Result<PanelReport, BenchError> {
    if config.panels == 0 || config.changes == 0 || config.rate == 0 {
        return Err(BenchError(
            "panels, changes and rate must each be at least 1".into(),
        ));
    }
    let server = crate::bench::bench_server(config.server_url.as_deref()).await?;
    let db = TestDb::create_on(server).await?;
    let (stop_tx, stop_rx) = watch::channel(false);
    let result = phases(&config, &db, stop_rx, &mut progress).await;
    let _ = stop_tx.send(true);
    db.cleanup().await;
    result
}

async fn phases(
    config: &PanelConfig,
    db: &TestDb,
    stop: watch::Receiver<bool>,
    progress: &mut (impl FnMut(&str) + Send),
) -> Result<PanelReport, BenchError> {
    let stats = connect_named(db.url(), 1, "tasklatch-bench-stats").await?;
    let site = site::start(db.url(), config.panels, stop.clone()).await?;
    let ids = SeededIds::new(5);
    progress(&format!(
        "phase 1: {} changes, no panel open",
        config.changes
    ));
    let before = settled(&stats).await?;
    change(&site, config, &ids, 0).await?;
    let baseline = settled(&stats).await?.since(before);
    progress(&format!("phase 2: opening {} panels", config.panels));
    let viewers = open_all(&site, config.panels, &stop).await?;
    let before = settled(&stats).await?;
    tokio::time::sleep(config.idle).await;
    let idle = settled(&stats).await?.since(before);
    let idle_window = config.idle + STATS_SETTLE;
    progress(&format!("phase 3: {} changes, panels open", config.changes));
    let renders_before = renders(&viewers);
    let acked = change(&site, config, &ids, config.changes).await?;
    let latencies = shown(&viewers, &acked).await?;
    let live = settled(&stats).await?.since(before).since(idle);
    Ok(PanelReport {
        config: config.clone(),
        latency: LatencyStats::of(latencies),
        baseline,
        idle,
        idle_window,
        live,
        renders: renders(&viewers) - renders_before,
    })
}

/// Opens one panel per owner.
async fn open_all(
    site: &Site,
    panels: usize,
    stop: &watch::Receiver<bool>,
) -> Result<Vec<Viewer>, BenchError> {
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| BenchError(e.to_string()))?;
    let mut viewers = Vec::with_capacity(panels);
    for k in 0..panels {
        let (_, thread, token) = owner(k);
        viewers.push(viewer::open(&http, site.addr, &token, &thread.0, stop.clone()).await?);
    }
    Ok(viewers)
}

/// Submits `config.changes` tasks at `config.rate`, round robin over the owners, numbered
/// from `first`: each task's id, owner index and acknowledgement.
async fn change(
    site: &Site,
    config: &PanelConfig,
    ids: &SeededIds,
    first: u32,
) -> Result<Vec<(String, usize, Instant)>, BenchError> {
    let every = Duration::from_secs(1) / config.rate;
    let started = Instant::now();
    let mut acked = Vec::with_capacity(config.changes as usize);
    for i in 0..config.changes {
        tokio::time::sleep_until((started + every * i).into()).await;
        let n = first + i;
        let k = n as usize % config.panels;
        let (owner, thread, _) = owner(k);
        let cmd = SubmitCommand {
            scope: Scope { owner, thread },
            server: SERVER.into(),
            name: format!("change-{n}"),
            tool: "inline".into(),
            arguments: "{}".into(),
        };
        let id = site
            .engine
            .submit(ids, cmd)
            .await
            .map_err(|e| BenchError(format!("change {n}: {e}")))?;
        acked.push((id.as_str().to_owned(), k, Instant::now()));
    }
    Ok(acked)
}

/// Each change's latency, once every one showed on its panel (or [`SHOW_LIMIT`] passed).
async fn shown(
    viewers: &[Viewer],
    acked: &[(String, usize, Instant)],
) -> Result<Vec<std::time::Duration>, BenchError> {
    let until = Instant::now() + SHOW_LIMIT;
    loop {
        let mut late = Vec::new();
        let mut latencies = Vec::with_capacity(acked.len());
        for (id, k, at) in acked {
            let seen = viewers[*k].seen.lock().unwrap_or_else(|p| p.into_inner());
            match seen.get(id) {
                Some(t) => latencies.push(t.saturating_duration_since(*at)),
                None => late.push(id.as_str()),
            }
        }
        if late.is_empty() {
            return Ok(latencies);
        }
        if Instant::now() > until {
            return Err(BenchError(format!(
                "{} changes never showed on their panel within {SHOW_LIMIT:?}: {:?}",
                late.len(),
                &late[..late.len().min(5)]
            )));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn renders(viewers: &[Viewer]) -> u64 {
    viewers
        .iter()
        .map(|v| v.renders.load(Ordering::Relaxed))
        .sum()
}

/// The database's counters, once every backend reported.
async fn settled(pool: &PgPool) -> Result<DbWork, BenchError> {
    tokio::time::sleep(STATS_SETTLE).await;
    let (transactions, rows): (i64, i64) = sqlx::query_as(
        "SELECT (xact_commit + xact_rollback)::bigint, (tup_returned + tup_fetched)::bigint \
         FROM pg_stat_database WHERE datname = current_database()",
    )
    .fetch_one(pool)
    .await?;
    Ok(DbWork { transactions, rows })
}
