//! Repeated real PostgreSQL failovers under load (issue 27 items 3 and 4).
//!
//! Two throwaway PostgreSQL clusters on loopback ports — a primary and a streaming standby made
//! with `pg_basebackup`, synchronous (`synchronous_standby_names = '*'`, `synchronous_commit =
//! on`) — two `tasklatch worker` processes whose `database.hosts` lists both, the real fastmcp
//! and `langgraph dev`. While rounds of submits, cancels and answers go through both workers'
//! APIs, with a stream of submits beside them (`failover_load.rs`; a call refused as safe to
//! repeat is repeated by the client), the primary's postmaster and its children are SIGKILLed at
//! once (a host crash), the standby promoted (`pg_ctl promote`), the old primary rewound
//! (`pg_rewind`) and started again on its own port as the new primary's synchronous standby; then
//! the cycle repeats, `TASKLATCH_FAILOVERS` times (default 3). Between the promote and the rejoin
//! the new primary has no standby to wait for: like Patroni's (non-strict) synchronous mode, its
//! `synchronous_standby_names` is emptied at the promote and set again once the old primary
//! streams; the next failover waits until the standby is `sync`.
//!
//! Asserted from the outside, after the load stops: every acknowledged submit (201, or 503 "do
//! not submit it again") is a task on the final primary, every acknowledged cancel ended its task
//! as `cancelled` and every acknowledged answer was sent (`sent`, or `unconfirmed` when a
//! failover ended the claim it was sent under — never sent twice) and its task `completed`; every
//! state change reached its Agent Server thread exactly once, in version order, as a successful
//! run; a submit refused as safe to repeat left no task and no run; no row that no acknowledged
//! submit accounts for; each worker counted every primary change; every failover met a submit in
//! flight. Measured and printed: promote → first claim on the new primary (a `*_claims` counter
//! of a task row rising there; goal ≤ 5 s), promote → standby `sync` again, the throughput of the
//! same batch of jobs and of single-row commits with the standby synchronous against asynchronous
//! (same clusters, same run), and the step's duration.
//!
//! `TASKLATCH_FAILOVER_ASYNC=1` is the asynchronous control: the standby stays asynchronous,
//! the workers run with `database.allow_async_replication = true`, and what was lost is
//! counted and printed, not asserted. `scripts/failover-soak` runs both.

use super::failover_load::{drive, read_back, round, settle, stream, submit, Load, Loss};
use super::process::Worker;
use super::{config, with_password, Kind, Peers, RUST_LOG};
use sqlx::{Connection, PgConnection};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tasklatch_core::policy::Policy;
use tasklatch_core::store::Store;
use tasklatch_peers::free_port;
use tasklatch_pg::harness::{with_search_path, LocalCluster};
use tasklatch_pg::{PgStore, SchemaName};

/// The failovers of `cargo test` (at least 3); the soak sets more.
const FAILOVERS_ENV: &str = "TASKLATCH_FAILOVERS";
const DEFAULT_FAILOVERS: usize = 3;
/// `1`: the asynchronous control.
const ASYNC_ENV: &str = "TASKLATCH_FAILOVER_ASYNC";
/// Load between a standby being `sync` again and the next kill.
const BETWEEN_FAILOVERS: Duration = Duration::from_secs(5);
/// The longest a promote may take to show a claim on the new primary (the goal is 5 s).
const FIRST_CLAIM_WITHIN: Duration = Duration::from_secs(15);
/// The longest the old primary may take to be streaming again after the promote.
const REJOINED_WITHIN: Duration = Duration::from_secs(60);
/// Jobs of each throughput batch.
const BATCH: usize = 12;
/// Single-row commits of each commit-rate measure.
const COMMITS: usize = 300;

/// The two clusters and which is the primary now.
struct Pair {
    clusters: [Arc<LocalCluster>; 2],
    primary: usize,
    synchronous: bool,
}

impl Pair {
    fn primary(&self) -> &Arc<LocalCluster> {
        &self.clusters[self.primary]
    }

    fn standby(&self) -> &Arc<LocalCluster> {
        &self.clusters[1 - self.primary]
    }

    /// `host:port` of both, for `database.hosts`.
    fn hosts(&self) -> String {
        let h: Vec<String> = self
            .clusters
            .iter()
            .map(|c| format!("\"127.0.0.1:{}\"", c.port()))
            .collect();
        h.join(", ")
    }

    fn state(&self) -> &'static str {
        if self.synchronous {
            "sync"
        } else {
            "async"
        }
    }
}

/// What one failover measured.
struct Cycle {
    /// When the postmaster was killed, and when the first claim on the new primary was seen.
    killed: Instant,
    claimed: Instant,
    /// `pg_ctl promote` (until it takes writes).
    promote: Duration,
    /// From the promote to the first claim seen on the new primary.
    first_claim: Duration,
    /// From the promote to the old primary streaming as a standby in the wanted state.
    rejoined: Duration,
}

/// Runs `f` (blocking: a server command) on the blocking pool; a failure fails the test.
async fn blocking(what: &str, f: impl FnOnce() -> Result<(), String> + Send + 'static) {
    tokio::task::spawn_blocking(f)
        .await
        .unwrap_or_else(|e| panic!("{what} panicked: {e}"))
        .unwrap_or_else(|e| panic!("{what}: {e}"));
}

/// The sum of the task rows' claim counters (`poll_claims`, `notify_claims`, `cancel_claims`):
/// it rises with every claim, on whichever server takes them.
async fn claims(cluster: &LocalCluster) -> Result<i64, String> {
    let mut conn = PgConnection::connect(&cluster.url())
        .await
        .map_err(|e| e.to_string())?;
    let n = sqlx::query_scalar(
        "SELECT coalesce(sum(poll_claims + notify_claims + cancel_claims), 0)::bigint \
         FROM tasklatch.tasks",
    )
    .fetch_one(&mut conn)
    .await
    .map_err(|e| e.to_string());
    let _ = conn.close().await;
    n
}

/// Waits until the new primary shows a claim beyond `before`: the time since `promoted`.
async fn first_claim(cluster: &LocalCluster, before: i64, promoted: Instant) -> Duration {
    loop {
        if claims(cluster).await.is_ok_and(|n| n > before) {
            return promoted.elapsed();
        }
        assert!(
            promoted.elapsed() < FIRST_CLAIM_WITHIN,
            "no claim on the new primary within {FIRST_CLAIM_WITHIN:?} of the promote"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits until the standby has replayed everything it received (its primary is gone): its
/// claim counters then hold the old primary's last word.
async fn claims_after_replay(standby: &LocalCluster) -> i64 {
    let until = Instant::now() + Duration::from_secs(10);
    while !standby.replay_caught_up().await.unwrap_or(false) {
        assert!(
            Instant::now() < until,
            "the standby never caught up its replay"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    claims(standby)
        .await
        .unwrap_or_else(|e| panic!("claims on the standby: {e}"))
}

/// Rewinds the old primary, rejoins it as the new primary's standby, names it synchronous
/// again (in the synchronous step) and waits until it streams in the wanted state.
async fn rejoin(pair: &Pair, old: Arc<LocalCluster>, new: Arc<LocalCluster>) {
    let source = new.clone();
    blocking("rejoin", move || old.rejoin_as_standby_of(&source)).await;
    if pair.synchronous {
        new.set_synchronous(true)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    }
    new.wait_for_standby(pair.state(), REJOINED_WITHIN)
        .await
        .unwrap_or_else(|e| panic!("the old primary did not rejoin: {e}"));
}

/// One failover: SIGKILL the primary's postmaster, promote the standby (emptying its
/// `synchronous_standby_names` until a standby streams again), rewind and rejoin the old
/// primary; measures the promote, the first claim and the rejoin.
async fn fail_over(pair: &mut Pair) -> Cycle {
    let (old, new) = (pair.primary().clone(), pair.standby().clone());
    let (victim, killed) = (old.clone(), Instant::now());
    blocking("SIGKILL the postmaster", move || victim.kill_postmaster()).await;
    let before = claims_after_replay(&new).await;
    let promoted = Instant::now();
    let promoting = new.clone();
    blocking("promote", move || promoting.promote()).await;
    let promote = promoted.elapsed();
    new.set_synchronous(false)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let (first_claim, ()) = tokio::join!(
        first_claim(&new, before, promoted),
        rejoin(pair, old, new.clone())
    );
    pair.primary = 1 - pair.primary;
    Cycle {
        killed,
        claimed: promoted + first_claim,
        promote,
        first_claim,
        rejoined: promoted.elapsed(),
    }
}

/// `n` failovers, [`BETWEEN_FAILOVERS`] of load after each; then sets `stop`.
async fn fail_over_n(pair: &mut Pair, n: usize, stop: &AtomicBool) -> Vec<Cycle> {
    let mut cycles = Vec::new();
    for k in 0..n {
        tokio::time::sleep(BETWEEN_FAILOVERS).await;
        let cycle = fail_over(pair).await;
        eprintln!(
            "failover {}/{n}: promote {:?}, promote -> first claim {:?}, -> standby streaming {:?}",
            k + 1,
            cycle.promote,
            cycle.first_claim,
            cycle.rejoined
        );
        cycles.push(cycle);
    }
    tokio::time::sleep(BETWEEN_FAILOVERS).await;
    stop.store(true, Ordering::SeqCst);
    cycles
}

/// Both workers on the host list (the first with two lanes), started.
async fn start_workers(pair: &Pair, peers: &Peers, dir: &Path) -> Vec<Worker> {
    let url = format!(
        "postgres://postgres@127.0.0.1:{}/postgres",
        pair.primary().port()
    );
    let env = [
        ("E2E_DATABASE_URL", with_password(&url)),
        ("E2E_MCP_AUTH", format!("Bearer {}", super::MCP_SECRET)),
        ("E2E_AGENT_KEY", super::AGENT_SECRET.to_owned()),
        ("RUST_LOG", RUST_LOG.to_owned()),
    ];
    let database = format!(
        "[database]\nhosts = [{}]\nallow_async_replication = {}\n",
        pair.hosts(),
        !pair.synchronous
    );
    let (mcp_url, agent_url) = (peers.mcp.url("/mcp"), peers.langgraph.url(""));
    let mut workers = Vec::new();
    for (name, lanes) in [("worker-fa", 2), ("worker-fb", 1)] {
        let port = free_port().unwrap_or_else(|e| panic!("{e}"));
        let text = config(port, lanes, &mcp_url, &agent_url).replacen("[database]\n", &database, 1);
        let mut w = Worker::new(name, dir, &text, port, &env);
        w.start().await;
        workers.push(w);
    }
    workers
}

/// Jobs per second of a batch of [`BATCH`] short jobs: submitted, then all delivered.
async fn batch_rate(workers: &[Worker], peers: &Peers, load: &mut Load) -> f64 {
    let started = Instant::now();
    let first = load.cases.len();
    for _ in 0..BATCH {
        let case = submit(workers, peers, Kind::Slow(1), load).await;
        load.cases.extend(case);
    }
    let behind = settle(peers, &load.cases[first..], Duration::from_secs(120)).await;
    assert_eq!(behind, 0, "a throughput batch was not delivered");
    BATCH as f64 / started.elapsed().as_secs_f64()
}

/// Single-row commits per second on the primary (a table of its own in `public`).
async fn commit_rate(primary: &LocalCluster) -> f64 {
    let mut conn = PgConnection::connect(&primary.url())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    for sql in [
        "DROP TABLE IF EXISTS public.commit_rate",
        "CREATE TABLE public.commit_rate (i int)",
    ] {
        sqlx::query(sql)
            .execute(&mut conn)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    }
    let started = Instant::now();
    for i in 0..COMMITS as i32 {
        sqlx::query("INSERT INTO public.commit_rate VALUES ($1)")
            .bind(i)
            .execute(&mut conn)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    }
    let rate = COMMITS as f64 / started.elapsed().as_secs_f64();
    let _ = conn.close().await;
    rate
}

/// The same workload with the standby synchronous and asynchronous (commits not waiting for
/// it), same clusters: (jobs/s, commits/s) each way. Leaves the standby as the step wants it.
async fn throughput(
    pair: &Pair,
    workers: &[Worker],
    peers: &Peers,
    load: &mut Load,
) -> [(f64, f64); 2] {
    let mut rates = [(0.0, 0.0); 2];
    for (k, synchronous) in [true, false].into_iter().enumerate() {
        let primary = pair.primary();
        primary
            .set_synchronous(synchronous)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let state = if synchronous { "sync" } else { "async" };
        primary
            .wait_for_standby(state, Duration::from_secs(30))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        rates[k] = (
            batch_rate(workers, peers, load).await,
            commit_rate(primary).await,
        );
    }
    let primary = pair.primary();
    primary
        .set_synchronous(pair.synchronous)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    primary
        .wait_for_standby(pair.state(), Duration::from_secs(30))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    rates
}

/// The task rows on the final primary.
async fn rows_of(primary: &LocalCluster) -> Vec<tasklatch_core::task::TaskRow> {
    let url = with_search_path(&primary.url(), &SchemaName::default());
    let pool = tasklatch_pg::connect(&url, 2)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let store = PgStore::new(pool.clone(), Policy::default());
    let rows = store
        .admin_rows(None, 100_000)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    pool.close().await;
    rows
}

/// Each worker's count of primary changes (its metrics).
async fn primary_changes(workers: &[Worker]) -> Vec<f64> {
    let mut changes = Vec::new();
    for w in workers {
        let text = w.http_text("/metrics").await;
        changes.push(super::metric(&text, "tasklatch_db_primary_changes_total"));
    }
    changes
}

/// `TASKLATCH_FAILOVERS` (at least 1), else [`DEFAULT_FAILOVERS`].
fn wanted_failovers() -> usize {
    let n = match std::env::var(FAILOVERS_ENV) {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|_| panic!("{FAILOVERS_ENV}={v}: not a number")),
        Err(_) => DEFAULT_FAILOVERS,
    };
    assert!(
        n >= 1,
        "{FAILOVERS_ENV}=0: a failover step needs a failover"
    );
    n
}

/// The losses by kind, as printed.
fn losses(load: &Load) -> String {
    let kinds = [
        (Loss::Submit, "submits"),
        (Loss::Cancel, "cancels"),
        (Loss::Answer, "answers"),
        (Loss::Delivery, "deliveries"),
        (Loss::Duplicate, "duplicated"),
    ];
    let parts: Vec<String> = kinds
        .iter()
        .map(|(loss, name)| format!("{name} {}", load.count(*loss)))
        .collect();
    parts.join(", ")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_writes_survive_repeated_failovers() {
    let _alone = super::ONE_AT_A_TIME.lock().await;
    let started = Instant::now();
    let n = wanted_failovers();
    let synchronous = std::env::var(ASYNC_ENV).map_or(true, |v| v != "1");
    let dir = std::env::temp_dir().join(format!("tasklatch-e2e-failover-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
    let (a, b) = LocalCluster::failover_pair(synchronous)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let mut pair = Pair {
        clusters: [Arc::new(a), Arc::new(b)],
        primary: 0,
        synchronous,
    };
    let peers = Peers::start(&dir);
    let mut workers = start_workers(&pair, &peers, &dir).await;
    let mut load = Load::default();
    let rates = throughput(&pair, &workers, &peers, &mut load).await;
    round(&workers, &peers, &mut load).await;

    let stop = AtomicBool::new(false);
    let load_started = Instant::now();
    let mut streamed = Load::default();
    let (cycles, rounds, _) = tokio::join!(
        fail_over_n(&mut pair, n, &stop),
        drive(&workers, &peers, &stop, &mut load),
        stream(&workers, &peers, &stop, &mut streamed)
    );
    let loaded = load_started.elapsed();
    load.absorb(streamed);
    let settle_within = Duration::from_secs(if synchronous { 180 } else { 90 });
    let behind = settle(&peers, &load.cases, settle_within).await;
    tokio::time::sleep(Duration::from_secs(3)).await; // anything extra would show now
    let rows = rows_of(pair.primary()).await;
    read_back(&workers, &peers, &rows, &mut load).await;
    let changes = primary_changes(&workers).await;
    for w in &mut workers {
        let (took, status) = w.term().await;
        assert!(status.success(), "{}: exit {status} after {took:?}", w.name);
    }
    report(
        &pair,
        &load,
        &cycles,
        rounds,
        rates,
        (behind, loaded, started.elapsed()),
    );
    assert_survived(&load, &cycles, &changes, synchronous);
    drop(peers);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The step's assertions: each worker followed every failover; with a synchronous standby,
/// nothing lost or duplicated, enough load, and submits in flight at every failover.
fn assert_survived(load: &Load, cycles: &[Cycle], changes: &[f64], synchronous: bool) {
    let n = cycles.len();
    assert!(
        changes.iter().all(|c| *c == n as f64),
        "each worker should have followed {n} primary changes: {changes:?}"
    );
    if synchronous {
        assert!(
            load.anomalies.is_empty(),
            "lost or duplicated with a synchronous standby:\n{:#?}",
            load.anomalies
        );
        assert!(
            load.cases.len() >= 4 * n,
            "too little load: {} tasks",
            load.cases.len()
        );
        let met = met_failovers(load, cycles);
        assert!(
            met.iter().all(|m| *m > 0),
            "a failover met no submit (in flight between the kill and the first claim on the new \
             primary): the step tested nothing there: {met:?}"
        );
    }
}

/// For each failover, the submit calls in flight between the kill and the first claim on the
/// new primary.
fn met_failovers(load: &Load, cycles: &[Cycle]) -> Vec<usize> {
    let meets = |c: &Cycle| {
        let during =
            |(sent, answered): &&(Instant, Instant)| *sent < c.claimed && *answered > c.killed;
        load.spans.iter().filter(during).count()
    };
    cycles.iter().map(meets).collect()
}

/// Prints what the step measured (one line a figure, for `reports/failover.md`).
fn report(
    pair: &Pair,
    load: &Load,
    cycles: &[Cycle],
    rounds: usize,
    rates: [(f64, f64); 2],
    (behind, loaded, total): (usize, Duration, Duration),
) {
    let secs = |f: fn(&Cycle) -> Duration| -> Vec<String> {
        cycles
            .iter()
            .map(|c| format!("{:.2}", f(c).as_secs_f64()))
            .collect()
    };
    let max_claim = cycles
        .iter()
        .map(|c| c.first_claim)
        .max()
        .unwrap_or_default();
    eprintln!(
        "FAILOVER standby: {}; failovers: {}",
        pair.state(),
        cycles.len()
    );
    eprintln!("FAILOVER promote s: {:?}", secs(|c| c.promote));
    eprintln!(
        "FAILOVER promote -> first claim s: {:?} (max {:.2})",
        secs(|c| c.first_claim),
        max_claim.as_secs_f64()
    );
    eprintln!(
        "FAILOVER promote -> standby streaming again s: {:?}",
        secs(|c| c.rejoined)
    );
    eprintln!(
        "FAILOVER load: {} tasks acknowledged in {rounds} rounds over {:.1} s ({} answered \"do not \
         submit it again\"), {} cancels, {} answers ({} left unconfirmed by a failover, their \
         task completed), {} calls retried, {} refused submits; {behind} threads behind at the end",
        load.cases.len(), loaded.as_secs_f64(), load.unconfirmed, load.cancels, load.answers,
        load.unconfirmed_answers, load.retries, load.refused.len()
    );
    eprintln!(
        "FAILOVER submits in flight between kill and first claim, by failover: {:?}",
        met_failovers(load, cycles)
    );
    eprintln!("FAILOVER lost/duplicated: {}", losses(load));
    for a in &load.anomalies {
        eprintln!("FAILOVER {:?}: {}", a.loss, a.what);
    }
    let [(jobs_sync, commits_sync), (jobs_async, commits_async)] = rates;
    eprintln!(
        "FAILOVER throughput sync/async: jobs {jobs_sync:.2}/{jobs_async:.2} per s (ratio {:.2}); \
         single-row commits {commits_sync:.0}/{commits_async:.0} per s (ratio {:.2})",
        jobs_sync / jobs_async,
        commits_sync / commits_async
    );
    eprintln!("FAILOVER step duration: {:.1} s", total.as_secs_f64());
}
