//! Chaos: while faults are on, every 50–300 ms either an engine task is aborted mid-call and
//! restarted under a new name, or a random backend of the store or the ledger is killed with
//! `pg_terminate_backend`.

use super::world::{lock, worker_loop, Shared, Workers};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use sqlx::{PgPool, Row};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;

/// Kills one random backend of the store's or the ledger's pool; whether one was killed.
const KILL_ONE_BACKEND: &str = "\
    SELECT pg_terminate_backend(pid) AS killed FROM pg_stat_activity \
    WHERE datname = current_database() AND pid <> pg_backend_pid() \
      AND application_name IN ('tasklatch-store', 'tasklatch-ledger') \
    ORDER BY random() LIMIT 1";

/// The chaos switch and its task.
pub(super) struct Chaos {
    on: Arc<AtomicBool>,
    task: Option<JoinHandle<()>>,
}

impl Chaos {
    /// Starts chaos if `enabled` (seeded by `seed`); otherwise a switch that is off.
    pub fn start(
        enabled: bool,
        seed: u64,
        shared: &Arc<Shared>,
        workers: &Workers,
        admin: &PgPool,
    ) -> Chaos {
        let on = Arc::new(AtomicBool::new(enabled));
        let task = enabled.then(|| {
            let (shared, workers, on, admin) =
                (shared.clone(), workers.clone(), on.clone(), admin.clone());
            let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0xc4a05);
            tokio::spawn(async move {
                while on.load(Ordering::Relaxed) {
                    tokio::time::sleep(Duration::from_millis(rng.random_range(50..300))).await;
                    if rng.random_bool(0.5) {
                        restart_one(&mut rng, &shared, &workers);
                    } else {
                        kill_one(&shared, &admin).await;
                    }
                }
            })
        });
        Chaos { on, task }
    }

    /// Turns chaos off (the current step finishes).
    pub fn calm(&self) {
        self.on.store(false, Ordering::Relaxed);
    }

    /// Turns chaos off and aborts its task.
    pub fn stop(self) {
        self.calm();
        if let Some(t) = self.task {
            t.abort();
        }
    }
}

/// Aborts a random engine task and restarts it after up to 200 ms under a new name.
fn restart_one(rng: &mut ChaCha8Rng, shared: &Arc<Shared>, workers: &Workers) {
    let mut w = lock(workers);
    if w.is_empty() {
        return;
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
}

/// Kills one backend (see [`KILL_ONE_BACKEND`]) and counts it if one was killed.
async fn kill_one(shared: &Shared, admin: &PgPool) {
    let killed = sqlx::query(KILL_ONE_BACKEND).fetch_optional(admin).await;
    if let Ok(Some(row)) = killed {
        if row.try_get::<bool, _>("killed").unwrap_or(false) {
            shared.kills.fetch_add(1, Ordering::Relaxed);
        }
    }
}
