//! `PgLedger`: the run ledger over Postgres, the same contract as
//! [`tasklatch_core::ledger::MemLedger`] (DOMAIN §3 "Delivery").
//!
//! - **The key decides first**: a known key returns its run, whatever the thread's state now.
//!   The `runs_key_unique` index makes this hold across processes: a new run is inserted with
//!   `ON CONFLICT (key) DO NOTHING` and the winner's run is read back. The whole start is one
//!   round trip: the `tasklatch_start_run` function (migrations/0003).
//! - **404** for a missing, deleted or foreign thread; nothing is created.
//! - **409** while a run is active on the thread. Race-safe: the thread row is locked
//!   `FOR UPDATE` while a run is started on it, so two starters on one thread are serialised and
//!   the second sees the first's run.
//! - Run ids are `run-{n}` with `n` from a sequence (so a sequential history gives the same ids
//!   as `MemLedger`; concurrent or refused inserts may leave gaps).
//!
//! Two ways to run it, the same answers:
//! - [`PgLedger::new`]: every call is its own round trip and transaction (one durable commit
//!   per launch). The simulation uses this: its calls are made one at a time and each must
//!   commit before the next.
//! - [`PgLedger::coalescing`]: concurrent `start_run` calls are gathered into one transaction
//!   (`tasklatch_start_runs`, migrations/0004) and concurrent `run_status` calls into one read
//!   (`WHERE run_id = ANY($1)`); see `coalesce.rs` for the contract (ordering, failure,
//!   crash mid-batch). For production-like use, where an engine launches a claimed batch at once.
//!
//! Wrap it in [`tasklatch_core::ledger::LedgerLauncher`] to get a `Launcher`.

use crate::coalesce::{BatchError, Coalescer};
use crate::error::ledger_error;
use crate::row::storable;
use crate::sql::ledger as sql;
use sqlx::{PgPool, Row};
use std::collections::HashMap;
use std::sync::Arc;
use tasklatch_core::ids::{OwnerId, RunId, ThreadId};
use tasklatch_core::ledger::{LedgerError, RunLedger, RunRecord};
#[cfg(feature = "mutations")]
use tasklatch_core::mutation::Mutant;
use tasklatch_core::ports::{LaunchOutcome, RunRequest, RunStatus};
use tasklatch_core::time::Timestamp;

/// The Postgres run ledger. Cheap to clone (clones share the pool and, when coalescing, the
/// batches: calls through any clone are gathered together).
#[derive(Clone)]
pub struct PgLedger {
    pool: PgPool,
    batches: Option<Arc<Batches>>,
    /// The planted bug `LedgerUniquenessDropped` is on (see [`PgLedger::with_mutant`]).
    #[cfg(feature = "mutations")]
    uniqueness_dropped: bool,
}

/// How [`PgLedger::coalescing`] gathers calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Coalescing {
    /// Most requests in one batch (one statement; at least 1).
    pub max_batch: usize,
    /// Most batches of each kind (launches, status reads) in flight at once; each holds one
    /// pooled connection while it runs (at least 1).
    pub leaders: usize,
}

impl Default for Coalescing {
    /// Batches of at most 256, two of each kind in flight.
    fn default() -> Self {
        Coalescing {
            max_batch: 256,
            leaders: 2,
        }
    }
}

/// The coalescers of a coalescing ledger.
struct Batches {
    starts: Coalescer<StartRequest, LaunchOutcome>,
    statuses: Coalescer<String, RunStatus>,
}

/// A launch as the database gets it (text made storable).
#[derive(Clone)]
struct StartRequest {
    key: String,
    owner: String,
    thread: String,
    prompt: String,
    now: i64,
}

/// The longest idempotency key the runs table takes (its `runs_key_len` check, in characters).
const MAX_KEY_CHARS: usize = 1_000;

/// Whether a launch can ride in a batch: its insert cannot break a constraint, so it cannot
/// fail the batch for the others. Any other key goes through the single function, which gives
/// it exactly its single-call answer (a refusal of the key only if it gets as far as the
/// insert).
fn batchable(key: &str) -> bool {
    (1..=MAX_KEY_CHARS).contains(&key.chars().count())
}

fn outcome_of(outcome: &str, run: Option<String>) -> Result<LaunchOutcome, LedgerError> {
    match (outcome, run) {
        ("started", Some(run)) => Ok(LaunchOutcome::Started(RunId(run))),
        ("busy", _) => Ok(LaunchOutcome::Busy),
        ("thread_gone", _) => Ok(LaunchOutcome::ThreadGone),
        _ => Err(LedgerError(
            "unexpected answer from the start-run function".into(),
        )),
    }
}

/// One transaction for a batch of launches, answered in order (migrations/0004).
async fn start_runs(
    pool: PgPool,
    reqs: Vec<StartRequest>,
) -> Result<Vec<LaunchOutcome>, BatchError> {
    let n = reqs.len();
    let (mut keys, mut owners, mut threads, mut prompts, mut nows) = (
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
    );
    for r in reqs {
        keys.push(r.key);
        owners.push(r.owner);
        threads.push(r.thread);
        prompts.push(r.prompt);
        nows.push(r.now);
    }
    let rows = sqlx::query(sql::START_RUNS)
        .bind(keys)
        .bind(owners)
        .bind(threads)
        .bind(prompts)
        .bind(nows)
        .fetch_all(&pool)
        .await
        .map_err(batch_error)?;
    if rows.len() != n {
        return Err(BatchError::Unavailable(LedgerError(format!(
            "tasklatch_start_runs answered {} of {n} requests",
            rows.len()
        ))));
    }
    rows.iter()
        .enumerate()
        .map(|(i, row)| {
            let ord: i32 = row.try_get("ord").map_err(ledger_error)?;
            if usize::try_from(ord).ok() != Some(i + 1) {
                return Err(LedgerError(
                    "tasklatch_start_runs answered out of order".into(),
                ));
            }
            outcome_of(
                &row.try_get::<String, _>("outcome").map_err(ledger_error)?,
                row.try_get("started_run").map_err(ledger_error)?,
            )
        })
        .collect::<Result<_, _>>()
        .map_err(BatchError::Unavailable)
}

/// One read for a batch of run-status lookups, answered in order.
async fn run_statuses(pool: PgPool, runs: Vec<String>) -> Result<Vec<RunStatus>, BatchError> {
    let rows = sqlx::query(sql::RUN_STATUSES)
        .bind(&runs)
        .fetch_all(&pool)
        .await
        .map_err(batch_error)?;
    answer_statuses(&runs, &rows).map_err(BatchError::Unavailable)
}

/// The statuses of `runs`, in order, from the rows read for them.
fn answer_statuses(
    runs: &[String],
    rows: &[sqlx::postgres::PgRow],
) -> Result<Vec<RunStatus>, LedgerError> {
    let mut found = HashMap::with_capacity(rows.len());
    for row in rows {
        let run: String = row.try_get("run_id").map_err(ledger_error)?;
        let status: String = row.try_get("status").map_err(ledger_error)?;
        found.insert(run, status);
    }
    runs.iter()
        .map(|r| {
            found
                .get(r)
                .map_or(Ok(RunStatus::Missing), |s| status_of(s))
        })
        .collect()
}

/// A batch statement's error: refused by the database for what a request holds (a data
/// exception, an integrity violation, a program limit, an error raised by a trigger or function:
/// SQLSTATE classes 22, 23, 54, P0), so the coalescer splits the batch to find it; anything else
/// (a lost or terminated connection, a timeout, a deadlock) reaches every request in it.
fn batch_error(e: sqlx::Error) -> BatchError {
    let about_a_request = match &e {
        sqlx::Error::Database(db) => db
            .code()
            .is_some_and(|code| REQUEST_CLASSES.iter().any(|class| code.starts_with(class))),
        _ => false,
    };
    if about_a_request {
        BatchError::Refused(ledger_error(e))
    } else {
        BatchError::Unavailable(ledger_error(e))
    }
}

/// SQLSTATE classes of errors a request's own values cause (see [`batch_error`]).
const REQUEST_CLASSES: [&str; 4] = ["22", "23", "54", "P0"];

fn status_of(s: &str) -> Result<RunStatus, LedgerError> {
    Ok(match s {
        "pending" => RunStatus::Pending,
        "running" => RunStatus::Running,
        "success" => RunStatus::Success,
        "error" => RunStatus::Error,
        "timeout" => RunStatus::Timeout,
        "interrupted" => RunStatus::Interrupted,
        _ => return Err(LedgerError("unknown run status".into())),
    })
}

impl PgLedger {
    /// A ledger over `pool` (already migrated, see [`crate::migrate`]): every call is its own
    /// round trip and transaction.
    pub fn new(pool: PgPool) -> Self {
        PgLedger {
            pool,
            batches: None,
            #[cfg(feature = "mutations")]
            uniqueness_dropped: false,
        }
    }

    /// [`PgLedger::new`], with the planted bug switched on when `mutant` is
    /// `LedgerUniquenessDropped`: the key's unique index is dropped (in this database: use a
    /// throwaway one) and runs are inserted blindly, without looking the key up. Any other
    /// mutant is ignored.
    #[cfg(feature = "mutations")]
    pub async fn with_mutant(pool: PgPool, mutant: Option<Mutant>) -> Result<Self, LedgerError> {
        let uniqueness_dropped = mutant == Some(Mutant::LedgerUniquenessDropped);
        if uniqueness_dropped {
            crate::planted::drop_key_uniqueness(&pool).await?;
        }
        Ok(PgLedger {
            pool,
            batches: None,
            uniqueness_dropped,
        })
    }

    /// A coalescing ledger over `pool` (already migrated): concurrent `start_run` calls share
    /// one transaction and concurrent `run_status` calls one read, batched as `config` says
    /// (see `coalesce.rs`). Every answer is the one [`PgLedger::new`] would give if the
    /// calls of a batch were made one after another in the order they arrived. The other
    /// methods are single calls, as in [`PgLedger::new`]. Never carries a planted bug.
    pub fn coalescing(pool: PgPool, config: Coalescing) -> Self {
        PgLedger {
            pool,
            batches: Some(Arc::new(Batches {
                starts: Coalescer::new(config.max_batch, config.leaders),
                statuses: Coalescer::new(config.max_batch, config.leaders),
            })),
            #[cfg(feature = "mutations")]
            uniqueness_dropped: false,
        }
    }

    /// The connection pool.
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// Creates many threads in one statement; existing ones are left alone,
    /// as [`RunLedger::create_thread`] does.
    pub async fn create_threads(
        &self,
        threads: &[(OwnerId, ThreadId)],
        now: Timestamp,
    ) -> Result<(), LedgerError> {
        let (owners, names): (Vec<String>, Vec<String>) = threads
            .iter()
            .map(|(o, t)| (storable(o.as_str()), storable(t.as_str())))
            .unzip();
        sqlx::query(sql::CREATE_THREADS)
            .bind(names)
            .bind(owners)
            .bind(now.as_micros())
            .execute(&self.pool)
            .await
            .map_err(ledger_error)?;
        Ok(())
    }

    /// The runs still pending or running, oldest first, at most `limit`: what an agent runtime
    /// has to work on. One read through the active-runs index.
    pub async fn active_runs(&self, limit: usize) -> Result<Vec<(RunId, Timestamp)>, LedgerError> {
        let rows = sqlx::query(sql::ACTIVE_RUNS)
            .bind(i64::try_from(limit).unwrap_or(i64::MAX))
            .fetch_all(&self.pool)
            .await
            .map_err(ledger_error)?;
        rows.iter()
            .map(|r| {
                Ok((
                    RunId(r.try_get::<String, _>("run_id").map_err(ledger_error)?),
                    Timestamp::from_micros(
                        r.try_get::<i64, _>("created_at").map_err(ledger_error)?,
                    ),
                ))
            })
            .collect()
    }

    /// Ends many active runs in one statement, as [`RunLedger::finish_run`] would one by one;
    /// returns how many changed. Statuses that are not terminal are skipped.
    pub async fn finish_runs(
        &self,
        runs: &[(RunId, RunStatus)],
        now: Timestamp,
    ) -> Result<u64, LedgerError> {
        let (ids, statuses): (Vec<String>, Vec<&'static str>) = runs
            .iter()
            .filter(|(_, s)| !s.is_active() && *s != RunStatus::Missing)
            .map(|(r, s)| (storable(r.as_str()), s.as_str()))
            .unzip();
        let done = sqlx::query(sql::FINISH_RUNS)
            .bind(ids)
            .bind(statuses)
            .bind(now.as_micros())
            .execute(&self.pool)
            .await
            .map_err(ledger_error)?;
        Ok(done.rows_affected())
    }
}

impl RunLedger for PgLedger {
    /// One statement: inserts the thread unless it exists (deleted or not: deletion is final).
    async fn create_thread(
        &self,
        owner: &OwnerId,
        thread: &ThreadId,
        now: Timestamp,
    ) -> Result<(), LedgerError> {
        sqlx::query(sql::CREATE_THREAD)
            .bind(storable(thread.as_str()))
            .bind(storable(owner.as_str()))
            .bind(now.as_micros())
            .execute(&self.pool)
            .await
            .map_err(ledger_error)?;
        Ok(())
    }

    /// One statement: marks the thread deleted; later launches on it answer 404. Returns whether
    /// the thread existed.
    async fn delete_thread(&self, thread: &ThreadId, now: Timestamp) -> Result<bool, LedgerError> {
        let done = sqlx::query(sql::DELETE_THREAD)
            .bind(storable(thread.as_str()))
            .bind(now.as_micros())
            .execute(&self.pool)
            .await
            .map_err(ledger_error)?;
        Ok(done.rows_affected() > 0)
    }

    /// One transaction: the run of a known key; else 404 for a missing, deleted or foreign
    /// thread; else 409 when a run is active on the thread; else a new running run. The thread
    /// row is locked `FOR UPDATE` before the key is looked up again and the thread checked, so
    /// concurrent starters on a thread are serialised; the unique key index settles the rest.
    /// When coalescing, the transaction is shared with the launches made at the same time.
    async fn start_run(
        &self,
        req: &RunRequest,
        now: Timestamp,
    ) -> Result<LaunchOutcome, LedgerError> {
        let key = storable(&req.key);
        let thread = storable(req.thread.as_str());
        let owner = storable(req.owner.as_str());
        if let Some(batches) = self.batches.as_ref().filter(|_| batchable(&key)) {
            let request = StartRequest {
                key,
                owner,
                thread,
                prompt: storable(&req.prompt),
                now: now.as_micros(),
            };
            let pool = self.pool.clone();
            return batches
                .starts
                .call(request, move |reqs| start_runs(pool.clone(), reqs))
                .await;
        }
        #[cfg(feature = "mutations")]
        if self.uniqueness_dropped {
            let prompt = storable(&req.prompt);
            return crate::planted::start_run_blindly(
                &self.pool, &key, &owner, &thread, &prompt, now,
            )
            .await;
        }
        // The hot path: one round trip (migrations/0003_start_run_function.sql).
        let row = sqlx::query(sql::START_RUN)
            .bind(&key)
            .bind(&owner)
            .bind(&thread)
            .bind(storable(&req.prompt))
            .bind(now.as_micros())
            .fetch_one(&self.pool)
            .await
            .map_err(ledger_error)?;
        outcome_of(
            &row.try_get::<String, _>("outcome").map_err(ledger_error)?,
            row.try_get("started_run").map_err(ledger_error)?,
        )
    }

    /// One statement: ends an active run with a terminal `status`; false (nothing changed) if
    /// the run is unknown or already ended, or `status` is not terminal.
    async fn finish_run(
        &self,
        run: &RunId,
        status: RunStatus,
        now: Timestamp,
    ) -> Result<bool, LedgerError> {
        if status.is_active() || status == RunStatus::Missing {
            return Ok(false);
        }
        let done = sqlx::query(sql::FINISH_RUN)
            .bind(storable(run.as_str()))
            .bind(status.as_str())
            .bind(now.as_micros())
            .execute(&self.pool)
            .await
            .map_err(ledger_error)?;
        Ok(done.rows_affected() > 0)
    }

    /// One read: the run's status; [`RunStatus::Missing`] for an unknown run. When coalescing,
    /// the read is shared with the lookups made at the same time.
    async fn run_status(&self, run: &RunId) -> Result<RunStatus, LedgerError> {
        if let Some(batches) = &self.batches {
            let pool = self.pool.clone();
            return batches
                .statuses
                .call(storable(run.as_str()), move |runs| {
                    run_statuses(pool.clone(), runs)
                })
                .await;
        }
        let row = sqlx::query(sql::RUN_STATUS)
            .bind(storable(run.as_str()))
            .fetch_optional(&self.pool)
            .await
            .map_err(ledger_error)?;
        match row {
            None => Ok(RunStatus::Missing),
            Some(r) => status_of(&r.try_get::<String, _>("status").map_err(ledger_error)?),
        }
    }

    /// One read: every run, in creation order.
    async fn runs(&self) -> Result<Vec<RunRecord>, LedgerError> {
        let rows = sqlx::query(sql::RUNS)
            .fetch_all(&self.pool)
            .await
            .map_err(ledger_error)?;
        rows.iter()
            .map(|r| {
                let get = |c: &str| r.try_get::<String, _>(c).map_err(ledger_error);
                Ok(RunRecord {
                    run_id: RunId(get("run_id")?),
                    key: get("key")?,
                    owner: OwnerId(get("owner")?),
                    thread: ThreadId(get("thread")?),
                    prompt: get("prompt")?,
                    status: status_of(&get("status")?)?,
                    created_at: Timestamp::from_micros(
                        r.try_get::<i64, _>("created_at").map_err(ledger_error)?,
                    ),
                    finished_at: r
                        .try_get::<Option<i64>, _>("finished_at")
                        .map_err(ledger_error)?
                        .map(Timestamp::from_micros),
                })
            })
            .collect()
    }
}
