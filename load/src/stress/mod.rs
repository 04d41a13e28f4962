//! `tasklatch stress`: real concurrency against one Postgres (issue 3, "Real concurrency").
//!
//! W engines (core `Engine`) run on a multi-threaded runtime against one database, with an
//! in-process remote server ([`driver::DriverDouble`]: tasks move through statuses, some ask for
//! input, all end terminal, some polls fail transiently) and the Postgres run ledger behind
//! `LedgerLauncher` (coalescing concurrent launches and lookups: [`PgLedger::coalescing`]),
//! wrapped with fault injection ([`launcher::FaultyLauncher`]: launch errors before and after
//! the run is created, failed lookups; 409 from real thread contention with several tasks per
//! thread; 404 from threads deleted mid-run) and finished by a simulated agent runtime
//! ([`launcher::AgentRuntime`]: slow, failed, timed-out and interrupted runs). Users cancel some
//! tasks. With chaos, engine tasks are aborted mid-call at random times and restarted, and
//! backend connections are killed with `pg_terminate_backend`; chaos stops once every remote
//! task is terminal, and the run ends when every notification has settled.
//!
//! The verdict ([`check`]) comes only from what the doubles recorded. Time is virtual: one
//! shared [`clock::ScaledClock`] runs [`StressConfig::speed`] times faster than real time.

pub mod check;
pub mod clock;
pub mod driver;
pub mod launcher;

use check::{SubmittedTask, Verdict};
use clock::ScaledClock;
use driver::{DriverDouble, RemoteKey};
use futures::StreamExt;
use launcher::{AgentRuntime, FaultyLauncher, LaunchFaults, RuntimeFaults};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use sqlx::{PgPool, Row};
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tasklatch_core::engine::{Engine, PassReport, SubmitCommand};
use tasklatch_core::ids::{OwnerId, SeededIds, TaskId, ThreadId};
use tasklatch_core::ledger::RunLedger;
use tasklatch_core::mutation::Mutant;
use tasklatch_core::policy::Policy;
use tasklatch_core::ports::Clock;
use tasklatch_core::store::{CancelTarget, Scope};
use tasklatch_core::time::Timestamp;
use tasklatch_pg::connect_named;
use tasklatch_pg::harness::{random_u64, TestDb};
use tasklatch_pg::{migrate, Coalescing, PgLedger, PgStore};
use tokio::task::JoinHandle;

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
    /// A planted bug for the store and the ledger (only with the `mutations` feature; see
    /// [`PgStore::new`] and [`PgLedger::new`]): proves the verdict notices.
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
            seed: 1,
            tasks_per_thread: 4,
            speed: 20,
            deadline: Duration::from_secs(600),
            deleted_threads: 0.01,
            cancels: 0.02,
            driver_errors: 0.01,
            launch: LaunchFaults::default(),
            runtime: RuntimeFaults::default(),
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
        retry_base: Duration::from_secs(2),
        max_retry_backoff: Duration::from_secs(60),
        release_backoff: Duration::from_secs(4),
        min_lease_left: Duration::from_secs(40),
        batch_size: 64,
    }
}

/// Where a run is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Faults on (aborts and kills too with chaos).
    Chaos,
    /// Chaos off: notifications drain.
    Heal,
    /// Everything settled.
    Done,
}

/// A progress snapshot, about once a second.
#[derive(Clone, Debug)]
pub struct Progress {
    /// Real time since the start.
    pub elapsed: Duration,
    /// Where the run is.
    pub phase: Phase,
    /// Tasks persisted.
    pub submitted: u64,
    /// Remote tasks terminal now.
    pub remote_terminal: usize,
    /// Rows whose notification is delivered.
    pub delivered_rows: i64,
    /// Rows with undelivered work.
    pub undelivered_rows: i64,
    /// Runs started (or found) by the launcher.
    pub runs: u64,
    /// 409 answers.
    pub busy: u64,
    /// Engine tasks aborted by chaos.
    pub aborts: u64,
    /// Backends killed by chaos.
    pub kills: u64,
}

impl Progress {
    /// One human-readable line.
    pub fn line(&self) -> String {
        format!(
            "[{:>6.1}s {:?}] submitted={} remote_terminal={} delivered_rows={} undelivered_rows={} runs={} busy409={} aborts={} kills={}",
            self.elapsed.as_secs_f64(),
            self.phase,
            self.submitted,
            self.remote_terminal,
            self.delivered_rows,
            self.undelivered_rows,
            self.runs,
            self.busy,
            self.aborts,
            self.kills
        )
    }
}

/// The outcome of a stress run.
#[derive(Clone, Debug)]
pub struct StressReport {
    /// lost / duplicated / unexpected / delivered.
    pub verdict: Verdict,
    /// Whether every notification settled before the deadline.
    pub settled: bool,
    /// Real time from the first submit to settling.
    pub elapsed: Duration,
    /// Delivered events per real second.
    pub events_per_s: f64,
    /// Tasks persisted.
    pub tasks: u64,
    /// Runs in the ledger.
    pub runs: u64,
    /// Engine aborts and backend kills.
    pub aborts: u64,
    /// Backend kills.
    pub kills: u64,
    /// Threads deleted.
    pub deleted_threads: u64,
    /// Cancels requested.
    pub cancels: u64,
    /// Launcher counters, as text.
    pub launcher: String,
}

impl StressReport {
    /// Whether lost, duplicated and unexpected are all zero.
    pub fn passed(&self) -> bool {
        self.verdict.lost == 0 && self.verdict.duplicated == 0 && self.verdict.unexpected == 0
    }

    /// The final line: `lost=0 duplicated=0 unexpected=0 delivered=N events_per_s=X`.
    pub fn line(&self) -> String {
        format!(
            "lost={} duplicated={} unexpected={} delivered={} events_per_s={:.0}",
            self.verdict.lost,
            self.verdict.duplicated,
            self.verdict.unexpected,
            self.verdict.delivered,
            self.events_per_s
        )
    }
}

/// Why a stress run could not run.
#[derive(Debug, thiserror::Error)]
#[error("stress: {0}")]
pub struct StressError(pub String);

fn err(what: &str) -> impl Fn(String) -> StressError + '_ {
    move |e| StressError(format!("{what}: {e}"))
}

type StressEngine = Engine<PgStore, DriverDouble, FaultyLauncher, ScaledClock>;

/// A running engine task and how many times it was restarted.
type Worker = (JoinHandle<()>, u32);

struct Shared {
    store: PgStore,
    driver: DriverDouble,
    launcher: FaultyLauncher,
    clock: ScaledClock,
    policy: Policy,
    stop: AtomicBool,
    aborts: AtomicU64,
    kills: AtomicU64,
}

impl Shared {
    fn engine(&self, worker: String) -> StressEngine {
        Engine::new(
            self.store.clone(),
            self.driver.clone(),
            self.launcher.clone(),
            self.clock.clone(),
            worker.as_str().into(),
            self.policy.clone(),
        )
    }
}

fn idle(r: &PassReport) -> bool {
    r.poll.claimed + r.notify.claimed + r.cancel.claimed == 0
}

/// One engine's loop: passes back to back, a short sleep when a pass found nothing.
async fn worker_loop(shared: Arc<Shared>, name: String) {
    let engine = shared.engine(name);
    while !shared.stop.load(Ordering::Relaxed) {
        let report = engine.run_once().await;
        if idle(&report) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
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

async fn run_on(
    config: &StressConfig,
    url: &str,
    on_progress: &mut (impl FnMut(&Progress) + Send),
) -> Result<StressReport, StressError> {
    let pool = |max, name| connect_named(url, max, name);
    let admin = pool(3, "tasklatch-admin")
        .await
        .map_err(|e| err("connect")(e.to_string()))?;
    migrate(&admin)
        .await
        .map_err(|e| err("migrate")(e.to_string()))?;
    let store_pool = pool(config.workers as u32 + 4, "tasklatch-store")
        .await
        .map_err(|e| err("connect")(e.to_string()))?;
    let ledger_pool = pool(16, "tasklatch-ledger")
        .await
        .map_err(|e| err("connect")(e.to_string()))?;
    let submit_pool = pool(4, "tasklatch-submit")
        .await
        .map_err(|e| err("connect")(e.to_string()))?;
    let runtime_pool = pool(2, "tasklatch-runtime")
        .await
        .map_err(|e| err("connect")(e.to_string()))?;

    let run_id = format!("{:08x}", random_u64() as u32);
    let prefix = format!("stress-{run_id}-");
    let clock = ScaledClock::new(Timestamp::from_micros(1_700_000_000_000_000), config.speed);
    let policy = stress_policy();
    let driver = DriverDouble::new(clock.clone(), config.seed, config.driver_errors);
    // The gateway coalesces concurrent launches and lookups, as a production one would; a
    // planted-bug run keeps the per-call ledger, where the ledger's planted bug lives.
    let ledger = match config.mutant {
        None => PgLedger::coalescing(ledger_pool.clone(), Coalescing::default()),
        Some(m) => PgLedger::new(ledger_pool.clone(), Some(m))
            .await
            .map_err(|e| err("ledger")(e.to_string()))?,
    };
    let threads_n = config.tasks.div_ceil(config.tasks_per_thread.max(1)).max(1);
    let thread_of = |i: u32| ThreadId(format!("{prefix}t{i}"));
    let owner_of = |i: u32| OwnerId(format!("{prefix}o{}", i % 50));
    let threads: Vec<(OwnerId, ThreadId)> = (0..threads_n)
        .map(|i| (owner_of(i), thread_of(i)))
        .collect();
    for chunk in threads.chunks(5_000) {
        ledger
            .create_threads(chunk, clock.now())
            .await
            .map_err(|e| err("threads")(e.to_string()))?;
    }
    let launcher = FaultyLauncher::new(ledger.clone(), clock.clone(), config.launch, config.seed);
    let shared = Arc::new(Shared {
        store: PgStore::new(store_pool.clone(), policy.clone(), config.mutant),
        driver: driver.clone(),
        launcher: launcher.clone(),
        clock: clock.clone(),
        policy: policy.clone(),
        stop: AtomicBool::new(false),
        aborts: AtomicU64::new(0),
        kills: AtomicU64::new(0),
    });
    let started = Instant::now();

    // The agent runtime.
    let runtime = {
        let shared = shared.clone();
        let mut rt = AgentRuntime::new(
            PgLedger::new(runtime_pool.clone(), None)
                .await
                .map_err(|e| err("ledger")(e.to_string()))?,
            clock.clone(),
            config.runtime,
            config.seed,
        );
        tokio::spawn(async move {
            while !shared.stop.load(Ordering::Relaxed) {
                rt.tick().await;
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
    };

    // The engines.
    let workers: Arc<Mutex<Vec<Worker>>> = Arc::new(Mutex::new(
        (0..config.workers)
            .map(|i| {
                (
                    tokio::spawn(worker_loop(shared.clone(), format!("w{i}.0"))),
                    0,
                )
            })
            .collect(),
    ));

    // The users: submits (with some cancels later), and thread deletions at random times.
    let submitted: Arc<Mutex<Vec<SubmittedTask>>> = Arc::new(Mutex::new(Vec::new()));
    let submit_done = Arc::new(AtomicBool::new(false));
    let cancels = Arc::new(AtomicU64::new(0));
    let mut rng = ChaCha8Rng::seed_from_u64(config.seed ^ 0x05e4);
    let deleted: HashSet<ThreadId> = (0..threads_n)
        .filter(|_| rng.random_bool(config.deleted_threads.clamp(0.0, 1.0)))
        .map(thread_of)
        .collect();
    let submit_secs = u64::from(config.tasks / 2_000) + 5;
    for thread in &deleted {
        let (ledger, clock, thread) = (ledger.clone(), clock.clone(), thread.clone());
        let delay = Duration::from_millis(rng.random_range(0..submit_secs * 1_000));
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            for _ in 0..10 {
                if ledger.delete_thread(&thread, clock.now()).await.is_ok() {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        });
    }
    let submitter = {
        let engine = Arc::new(Engine::new(
            PgStore::new(submit_pool.clone(), policy.clone(), None),
            driver.clone(),
            launcher.clone(),
            clock.clone(),
            "submitter".into(),
            policy.clone(),
        ));
        let job = SubmitJob {
            engine,
            ids: Arc::new(SeededIds::new(config.seed ^ random_u64())),
            submitted: submitted.clone(),
            cancels: cancels.clone(),
            prefix: prefix.clone(),
            tasks_per_thread: config.tasks_per_thread.max(1),
            cancel_share: config.cancels.clamp(0.0, 1.0),
            seed: config.seed,
            clock: clock.clone(),
        };
        let (tasks, done) = (config.tasks, submit_done.clone());
        tokio::spawn(async move {
            futures::stream::iter(0..tasks)
                .map(|n| job.submit(n))
                .buffer_unordered(16)
                .for_each(|_| async {})
                .await;
            done.store(true, Ordering::SeqCst);
        })
    };

    // Chaos: abort engines mid-call and restart them, kill backend connections.
    let chaos_on = Arc::new(AtomicBool::new(config.chaos));
    let chaos = config.chaos.then(|| {
        let (shared, workers, chaos_on, admin) = (
            shared.clone(),
            workers.clone(),
            chaos_on.clone(),
            admin.clone(),
        );
        let mut rng = ChaCha8Rng::seed_from_u64(config.seed ^ 0xc4a05);
        tokio::spawn(async move {
            while chaos_on.load(Ordering::Relaxed) {
                tokio::time::sleep(Duration::from_millis(rng.random_range(50..300))).await;
                if rng.random_bool(0.5) {
                    let mut w = workers.lock().unwrap_or_else(|p| p.into_inner());
                    if w.is_empty() {
                        continue;
                    }
                    let i = rng.random_range(0..w.len());
                    w[i].0.abort();
                    w[i].1 += 1;
                    let restart = Duration::from_millis(rng.random_range(0..200));
                    let name = format!("w{i}.{}", w[i].1);
                    let inner = shared.clone();
                    w[i].0 = tokio::spawn(async move {
                        tokio::time::sleep(restart).await;
                        worker_loop(inner, name).await;
                    });
                    shared.aborts.fetch_add(1, Ordering::Relaxed);
                } else {
                    let killed = sqlx::query(
                        "SELECT pg_terminate_backend(pid) AS killed FROM pg_stat_activity \
                         WHERE datname = current_database() AND pid <> pg_backend_pid() \
                           AND application_name IN ('tasklatch-store', 'tasklatch-ledger') \
                         ORDER BY random() LIMIT 1",
                    )
                    .fetch_optional(&admin)
                    .await;
                    if let Ok(Some(row)) = killed {
                        if row.try_get::<bool, _>("killed").unwrap_or(false) {
                            shared.kills.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            }
        })
    });

    // Watch until everything settled (or the deadline).
    let mut phase = Phase::Chaos;
    let mut last_progress = Instant::now();
    let mut settled_at = None;
    let chaos_limit = config.deadline / 2;
    let pattern = format!("{prefix}%");
    loop {
        tokio::time::sleep(Duration::from_millis(250)).await;
        let all_submitted = submit_done.load(Ordering::SeqCst);
        let n_submitted = lock(&submitted).len() as u64;
        let (_, remote_terminal) = driver.counts();
        let summary = summarize(&admin, &pattern).await;
        if phase == Phase::Chaos
            && ((all_submitted && remote_terminal as u64 >= n_submitted)
                || started.elapsed() > chaos_limit)
        {
            phase = Phase::Heal;
            chaos_on.store(false, Ordering::Relaxed);
        }
        let settled = all_submitted
            && summary.is_some_and(|s| {
                s.rows == n_submitted as i64
                    && s.active == 0
                    && s.undelivered == 0
                    && s.in_flight == 0
            });
        if settled {
            phase = Phase::Done;
            settled_at = Some(started.elapsed());
        }
        if last_progress.elapsed() >= Duration::from_secs(1) || settled {
            last_progress = Instant::now();
            let c = launcher.counters();
            on_progress(&Progress {
                elapsed: started.elapsed(),
                phase,
                submitted: n_submitted,
                remote_terminal,
                delivered_rows: summary.map_or(-1, |s| s.delivered),
                undelivered_rows: summary.map_or(-1, |s| s.undelivered),
                runs: c.started.load(Ordering::Relaxed),
                busy: c.busy.load(Ordering::Relaxed),
                aborts: shared.aborts.load(Ordering::Relaxed),
                kills: shared.kills.load(Ordering::Relaxed),
            });
        }
        if settled || started.elapsed() > config.deadline {
            break;
        }
    }

    // Stop everything, then judge from the doubles' records.
    chaos_on.store(false, Ordering::Relaxed);
    shared.stop.store(true, Ordering::SeqCst);
    if let Some(c) = chaos {
        c.abort();
    }
    submitter.abort();
    for (h, _) in lock(&workers).drain(..) {
        h.abort();
    }
    runtime.abort();
    let elapsed = settled_at.unwrap_or_else(|| started.elapsed());
    let runs: Vec<_> = RunLedger::runs(
        &PgLedger::new(admin.clone(), None)
            .await
            .map_err(|e| err("ledger")(e.0))?,
    )
    .await
    .map_err(|e| err("runs")(e.0))?
    .into_iter()
    .filter(|r| r.thread.as_str().starts_with(&prefix))
    .collect();
    let submitted = lock(&submitted).clone();
    let verdict = check::check(&submitted, &driver.records(), &runs, &deleted);
    let c = launcher.counters();
    let launcher_text = format!(
        "requests={} started={} busy409={} gone404={} injected_before={} injected_after={} \
         ledger_errors={} lookups={} lookup_failures={}",
        c.requests.load(Ordering::Relaxed),
        c.started.load(Ordering::Relaxed),
        c.busy.load(Ordering::Relaxed),
        c.gone.load(Ordering::Relaxed),
        c.failed_before.load(Ordering::Relaxed),
        c.failed_after.load(Ordering::Relaxed),
        c.ledger_errors.load(Ordering::Relaxed),
        c.lookups.load(Ordering::Relaxed),
        c.lookup_failures.load(Ordering::Relaxed),
    );
    for p in [
        &admin,
        &store_pool,
        &ledger_pool,
        &submit_pool,
        &runtime_pool,
    ] {
        p.close().await;
    }
    Ok(StressReport {
        events_per_s: verdict.delivered as f64 / elapsed.as_secs_f64().max(1e-9),
        settled: settled_at.is_some(),
        elapsed,
        tasks: submitted.len() as u64,
        runs: runs.len() as u64,
        aborts: shared.aborts.load(Ordering::Relaxed),
        kills: shared.kills.load(Ordering::Relaxed),
        deleted_threads: deleted.len() as u64,
        cancels: cancels.load(Ordering::Relaxed),
        launcher: launcher_text,
        verdict,
    })
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The state of this run's rows, from one scan.
#[derive(Clone, Copy, Debug)]
struct Summary {
    rows: i64,
    active: i64,
    undelivered: i64,
    in_flight: i64,
    delivered: i64,
}

async fn summarize(admin: &PgPool, owner_pattern: &str) -> Option<Summary> {
    let row = sqlx::query(
        "SELECT count(*) AS rows, \
             count(*) FILTER (WHERE remote_status NOT IN ('completed', 'failed', 'cancelled') \
                 AND cancel_status <> 'dead_letter') AS active, \
             count(*) FILTER (WHERE event_version > notified_version) AS undelivered, \
             count(*) FILTER (WHERE notify_status IN ('claimed', 'dispatched', 'retry')) \
                 AS in_flight, \
             count(*) FILTER (WHERE notify_status = 'delivered') AS delivered \
         FROM tasks WHERE owner LIKE $1",
    )
    .bind(owner_pattern)
    .fetch_one(admin)
    .await
    .ok()?;
    let get = |c: &str| row.try_get::<i64, _>(c).ok();
    Some(Summary {
        rows: get("rows")?,
        active: get("active")?,
        undelivered: get("undelivered")?,
        in_flight: get("in_flight")?,
        delivered: get("delivered")?,
    })
}

/// Submits task `n` (retrying with a new remote task on failure) and maybe cancels it later.
struct SubmitJob {
    engine: Arc<StressEngine>,
    ids: Arc<SeededIds>,
    submitted: Arc<Mutex<Vec<SubmittedTask>>>,
    cancels: Arc<AtomicU64>,
    prefix: String,
    tasks_per_thread: u32,
    cancel_share: f64,
    seed: u64,
    clock: ScaledClock,
}

impl SubmitJob {
    async fn submit(&self, n: u32) {
        let i = n / self.tasks_per_thread;
        let scope = Scope {
            owner: OwnerId(format!("{}o{}", self.prefix, i % 50)),
            thread: ThreadId(format!("{}t{i}", self.prefix)),
        };
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed ^ (u64::from(n) << 24) ^ 0x5ab);
        for attempt in 0..5 {
            let key = RemoteKey { n, attempt };
            let cmd = SubmitCommand {
                scope: scope.clone(),
                server: "srv".into(),
                name: format!("task {n}"),
                tool: "job".into(),
                arguments: key.input(),
            };
            match self.engine.submit(self.ids.as_ref(), cmd).await {
                Ok(task_id) => {
                    lock(&self.submitted).push(SubmittedTask {
                        task_id: task_id.clone(),
                        key,
                        thread: scope.thread.clone(),
                    });
                    if rng.random_bool(self.cancel_share) {
                        let delay = self
                            .clock
                            .real(Duration::from_secs(rng.random_range(1..40)));
                        self.cancel_later(scope, task_id, delay);
                    }
                    return;
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        }
    }

    fn cancel_later(&self, scope: Scope, task: TaskId, delay: Duration) {
        let engine = self.engine.clone();
        let cancels = self.cancels.clone();
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            for _ in 0..5 {
                if engine
                    .cancel(&scope, &CancelTarget::Id(task.clone()))
                    .await
                    .is_ok()
                {
                    cancels.fetch_add(1, Ordering::Relaxed);
                    return;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        });
    }
}
