//! The stress run's users: one namespace of owners and threads per run, the threads created up
//! front, some deleted at random times (404), and every task submitted — some cancelled a while
//! later.

use super::check::SubmittedTask;
use super::world::{lock, Shared, StressEngine};
use super::{err, StressConfig, StressError};
use crate::clock::ScaledClock;
use crate::doubles::driver::RemoteKey;
use futures::StreamExt;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use sqlx::PgPool;
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tasklatch_core::engine::{Engine, SubmitCommand};
use tasklatch_core::ids::{OwnerId, SeededIds, TaskId, ThreadId};
use tasklatch_core::ledger::RunLedger;
use tasklatch_core::ports::Clock;
use tasklatch_core::store::{CancelTarget, Scope};
use tasklatch_pg::{PgLedger, PgStore};
use tokio::task::JoinHandle;

/// Owners sharing the run's threads (thread i belongs to owner i mod 50).
const OWNERS: u32 = 50;

/// Threads created per statement.
const THREAD_CHUNK: usize = 5_000;

/// Submits in flight at once.
const SUBMITS_IN_FLIGHT: usize = 16;

/// Tries per submit (each a new remote task) and per cancel.
const TRIES: u32 = 5;

/// Tries per thread deletion.
const DELETE_TRIES: u32 = 10;

/// The run's names: every owner and thread starts with a per-run prefix, so several runs can
/// share a database and each one's rows and runs are found by the prefix.
#[derive(Clone, Debug)]
pub(super) struct Namespace {
    prefix: String,
}

impl Namespace {
    /// Names under `prefix`.
    pub fn new(prefix: String) -> Self {
        Namespace { prefix }
    }

    /// Thread `i`.
    pub fn thread(&self, i: u32) -> ThreadId {
        ThreadId(format!("{}t{i}", self.prefix))
    }

    /// The owner of thread `i`.
    pub fn owner(&self, i: u32) -> OwnerId {
        OwnerId(format!("{}o{}", self.prefix, i % OWNERS))
    }

    /// Whether `thread` is one of this run's.
    pub fn owns(&self, thread: &ThreadId) -> bool {
        thread.as_str().starts_with(&self.prefix)
    }

    /// A `LIKE` pattern matching this run's owners.
    pub fn owner_pattern(&self) -> String {
        format!("{}%", self.prefix)
    }
}

/// The run's threads: `config.tasks` tasks, `tasks_per_thread` on each.
pub(super) fn thread_count(config: &StressConfig) -> u32 {
    config.tasks.div_ceil(config.tasks_per_thread.max(1)).max(1)
}

/// Creates threads `0..n` of `names` in the ledger.
pub(super) async fn create_threads(
    ledger: &PgLedger,
    names: &Namespace,
    n: u32,
    clock: &ScaledClock,
) -> Result<(), StressError> {
    let threads: Vec<(OwnerId, ThreadId)> =
        (0..n).map(|i| (names.owner(i), names.thread(i))).collect();
    for chunk in threads.chunks(THREAD_CHUNK) {
        ledger
            .create_threads(chunk, clock.now())
            .await
            .map_err(|e| err("threads")(e.to_string()))?;
    }
    Ok(())
}

/// Picks `config.deleted_threads` of the `n` threads and deletes each at a random time while the
/// tasks are being submitted; returns the picked threads.
pub(super) fn delete_some_threads(
    config: &StressConfig,
    names: &Namespace,
    n: u32,
    ledger: &PgLedger,
    clock: &ScaledClock,
) -> HashSet<ThreadId> {
    let mut rng = ChaCha8Rng::seed_from_u64(config.seed ^ 0x05e4);
    let deleted: HashSet<ThreadId> = (0..n)
        .filter(|_| rng.random_bool(config.deleted_threads.clamp(0.0, 1.0)))
        .map(|i| names.thread(i))
        .collect();
    let submit_secs = u64::from(config.tasks / 2_000) + 5;
    for thread in &deleted {
        let (ledger, clock, thread) = (ledger.clone(), clock.clone(), thread.clone());
        let delay = Duration::from_millis(rng.random_range(0..submit_secs * 1_000));
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            for _ in 0..DELETE_TRIES {
                if ledger.delete_thread(&thread, clock.now()).await.is_ok() {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        });
    }
    deleted
}

/// What the submitter records, shared with the watcher and the verdict.
#[derive(Clone, Default)]
pub(super) struct Submissions {
    /// Every task persisted, in the order its submit returned.
    pub tasks: Arc<Mutex<Vec<SubmittedTask>>>,
    /// Set once every submit has ended.
    pub done: Arc<AtomicBool>,
    /// Cancels requested.
    pub cancels: Arc<AtomicU64>,
}

impl Submissions {
    /// Tasks persisted so far.
    pub fn count(&self) -> u64 {
        lock(&self.tasks).len() as u64
    }

    /// Whether every submit has ended.
    pub fn finished(&self) -> bool {
        self.done.load(Ordering::SeqCst)
    }
}

/// Submits every task of the run, [`SUBMITS_IN_FLIGHT`] at a time, through an engine of its own
/// whose store uses `pool`.
pub(super) fn spawn_submitter(
    config: &StressConfig,
    names: &Namespace,
    shared: &Shared,
    pool: &PgPool,
    out: &Submissions,
) -> JoinHandle<()> {
    let engine = Engine::new(
        PgStore::new(pool.clone(), shared.policy.clone()),
        shared.driver.clone(),
        shared.launcher.clone(),
        shared.clock.clone(),
        "submitter".into(),
        shared.policy.clone(),
    );
    let job = SubmitJob {
        engine: Arc::new(engine),
        ids: Arc::new(SeededIds::new(
            config.seed ^ tasklatch_pg::harness::random_u64(),
        )),
        out: out.clone(),
        names: names.clone(),
        tasks_per_thread: config.tasks_per_thread.max(1),
        cancel_share: config.cancels.clamp(0.0, 1.0),
        seed: config.seed,
        clock: shared.clock.clone(),
    };
    let (tasks, done) = (config.tasks, out.done.clone());
    tokio::spawn(async move {
        futures::stream::iter(0..tasks)
            .map(|n| job.submit(n))
            .buffer_unordered(SUBMITS_IN_FLIGHT)
            .for_each(|_| async {})
            .await;
        done.store(true, Ordering::SeqCst);
    })
}

/// Submits task `n` (retrying with a new remote task on failure) and maybe cancels it later.
struct SubmitJob {
    engine: Arc<StressEngine>,
    ids: Arc<SeededIds>,
    out: Submissions,
    names: Namespace,
    tasks_per_thread: u32,
    cancel_share: f64,
    seed: u64,
    clock: ScaledClock,
}

impl SubmitJob {
    async fn submit(&self, n: u32) {
        let i = n / self.tasks_per_thread;
        let scope = Scope {
            owner: self.names.owner(i),
            thread: self.names.thread(i),
        };
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed ^ (u64::from(n) << 24) ^ 0x5ab);
        for attempt in 0..TRIES {
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
                    lock(&self.out.tasks).push(SubmittedTask {
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
        let cancels = self.out.cancels.clone();
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            for _ in 0..TRIES {
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
