//! Chaos: while faults are on, every 50–300 ms an engine task is aborted mid-call and restarted
//! under a new name, or a random backend of the store or the ledger is killed with
//! `pg_terminate_backend` — or, one step in twenty, every one of them at once: what a Postgres
//! restart does to its clients (every connection dies mid-statement; the pools reconnect).

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

/// Kills every backend of the store's and the ledger's pools (a database restart, as the
/// clients see it); how many were killed.
const KILL_EVERY_BACKEND: &str = "\
    SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) AS killed FROM pg_stat_activity \
    WHERE datname = current_database() AND pid <> pg_backend_pid() \
      AND application_name IN ('tasklatch-store', 'tasklatch-ledger')";

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
                    match rng.random_range(0..20) {
                        0 => kill_every(&shared, &admin).await,
                        1..=10 => restart_one(&mut rng, &shared, &workers),
                        _ => kill_one(&shared, &admin).await,
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

/// Kills every backend (see [`KILL_EVERY_BACKEND`]): counts a restart, and its kills.
async fn kill_every(shared: &Shared, admin: &PgPool) {
    let killed = sqlx::query(KILL_EVERY_BACKEND).fetch_one(admin).await;
    if let Ok(row) = killed {
        let n = row.try_get::<i64, _>("killed").unwrap_or(0);
        shared.restarts.fetch_add(1, Ordering::Relaxed);
        shared
            .kills
            .fetch_add(u64::try_from(n).unwrap_or(0), Ordering::Relaxed);
    }
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
