//! Real Postgres in the loop: one thread owns the connection and runs each store or ledger
//! call to completion while the simulation waits.
//!
//! The simulation thread blocks on the answer, so simulated time stands still during a call
//! (measured: a pool used directly inside a host let paused time race ahead by seconds per
//! call) and calls run one at a time in the order the simulation issues them. Each gateway
//! works on a fresh database of its own, dropped when the gateway is.

use crate::run::ledger_call::{dispatch_ledger, LedgerAnswer, LedgerCall};
use crate::wire::db::{dispatch, StoreRequest, StoreResponse};
use sqlx::postgres::PgPoolOptions;
use sqlx::Executor;
use sqlx::PgPool;
use std::sync::mpsc::{channel, Sender};
use std::sync::Mutex;
use std::thread::JoinHandle;
use tasklatch_core::mutation::Mutant;
use tasklatch_core::policy::Policy;
use tasklatch_pg::harness::TestDb;
use tasklatch_pg::{PgLedger, PgStore};

enum Job {
    Store(StoreRequest, Sender<StoreResponse>),
    Ledger(LedgerCall, Sender<LedgerAnswer>),
}

/// The blocking gateway to a fresh Postgres database.
pub struct PgGateway {
    jobs: Mutex<Option<Sender<Job>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

/// A fresh database, its store and ledger, and the one-connection pool they use.
async fn set_up(
    policy: Policy,
    mutant: Option<Mutant>,
) -> Result<(TestDb, PgStore, PgLedger, PgPool), String> {
    let db = TestDb::try_create().await.map_err(|e| e.to_string())?;
    let pool = PgPoolOptions::new()
        .max_connections(1)
        .after_connect(|conn, _| {
            Box::pin(async move {
                conn.execute("SET synchronous_commit = off")
                    .await
                    .map(|_| ())
            })
        })
        .connect(db.url())
        .await
        .map_err(|e| format!("cannot connect to the simulation database: {e}"))?;
    let (store, ledger) = open(&pool, policy, mutant).await?;
    Ok((db, store, ledger, pool))
}

impl PgGateway {
    /// Creates a fresh database (see `tasklatch_pg::harness` for where) and starts the thread.
    pub fn start(policy: Policy, mutant: Option<Mutant>) -> Result<PgGateway, String> {
        let (jobs, inbox) = channel::<Job>();
        let (ready_tx, ready) = channel::<Result<(), String>>();
        let thread = std::thread::Builder::new()
            .name("pg-gateway".into())
            .spawn(move || {
                let rt = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = ready_tx.send(Err(format!(
                            "cannot start the Postgres gateway runtime: {e}"
                        )));
                        return;
                    }
                };
                rt.block_on(async move {
                    let (db, store, ledger, pool) = match set_up(policy, mutant).await {
                        Ok(parts) => {
                            let _ = ready_tx.send(Ok(()));
                            parts
                        }
                        Err(e) => {
                            let _ = ready_tx.send(Err(e));
                            return;
                        }
                    };
                    while let Ok(job) = inbox.recv() {
                        match job {
                            Job::Store(req, reply) => {
                                let _ = reply.send(dispatch(&store, req).await);
                            }
                            Job::Ledger(call, reply) => {
                                let _ = reply.send(dispatch_ledger(&ledger, call).await);
                            }
                        }
                    }
                    pool.close().await;
                    db.cleanup().await;
                });
            })
            .map_err(|e| format!("cannot start the Postgres gateway thread: {e}"))?;
        match ready.recv() {
            Ok(Ok(())) => Ok(PgGateway {
                jobs: Mutex::new(Some(jobs)),
                thread: Mutex::new(Some(thread)),
            }),
            Ok(Err(e)) => Err(e),
            Err(_) => Err("the Postgres gateway thread stopped during setup".into()),
        }
    }

    fn send(&self, job: Job) -> bool {
        let jobs = self.jobs.lock().unwrap_or_else(|p| p.into_inner());
        jobs.as_ref().is_some_and(|j| j.send(job).is_ok())
    }

    /// Runs a store call to completion.
    pub fn store(&self, req: StoreRequest) -> StoreResponse {
        let (tx, rx) = channel();
        if !self.send(Job::Store(req, tx)) {
            return StoreResponse::Unit(Err(tasklatch_core::store::StoreError::Unavailable(
                "the Postgres gateway stopped".into(),
            )));
        }
        rx.recv().unwrap_or_else(|_| {
            StoreResponse::Unit(Err(tasklatch_core::store::StoreError::Unavailable(
                "the Postgres gateway stopped".into(),
            )))
        })
    }

    /// Runs a ledger call to completion.
    pub fn ledger(&self, call: LedgerCall) -> LedgerAnswer {
        let (tx, rx) = channel();
        let stopped = || {
            LedgerAnswer::Done(Err(tasklatch_core::ledger::LedgerError(
                "the Postgres gateway stopped".into(),
            )))
        };
        if !self.send(Job::Ledger(call, tx)) {
            return stopped();
        }
        rx.recv().unwrap_or_else(|_| stopped())
    }
}

impl Drop for PgGateway {
    fn drop(&mut self) {
        self.jobs.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(t) = self.thread.lock().unwrap_or_else(|p| p.into_inner()).take() {
            let _ = t.join();
        }
    }
}

/// The store and the ledger over `pool`, with the SQL variant of `mutant` switched on.
#[cfg(feature = "mutations")]
async fn open(
    pool: &PgPool,
    policy: Policy,
    mutant: Option<Mutant>,
) -> Result<(PgStore, PgLedger), String> {
    let ledger = PgLedger::with_mutant(pool.clone(), mutant)
        .await
        .map_err(|e| e.to_string())?;
    Ok((PgStore::with_mutant(pool.clone(), policy, mutant), ledger))
}

/// The store and the ledger over `pool` (planted bugs exist only with the `mutations` feature).
#[cfg(not(feature = "mutations"))]
async fn open(
    pool: &PgPool,
    policy: Policy,
    _mutant: Option<Mutant>,
) -> Result<(PgStore, PgLedger), String> {
    Ok((
        PgStore::new(pool.clone(), policy),
        PgLedger::new(pool.clone()),
    ))
}
