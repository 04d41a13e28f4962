//! The planted bugs that live in SQL (`tasklatch_core::mutation`, feature `mutations` only):
//! nothing here exists in a normal build, so none of it can run in production.
//!
//! - `LedgerUniquenessDropped`: the run ledger's unique key index is dropped and a launch inserts
//!   its run blindly — the same thread checks as the real ledger, no key lookup.

use crate::error::ledger_error;
use sqlx::{PgPool, Row};
use tasklatch_core::ids::RunId;
use tasklatch_core::ledger::LedgerError;
use tasklatch_core::ports::LaunchOutcome;
use tasklatch_core::time::Timestamp;

/// Drops the runs table's unique key index (in the database behind `pool`: use a throwaway one).
pub(crate) async fn drop_key_uniqueness(pool: &PgPool) -> Result<(), LedgerError> {
    sqlx::query("DROP INDEX IF EXISTS runs_key_unique")
        .execute(pool)
        .await
        .map_err(ledger_error)?;
    Ok(())
}

/// A launch under `LedgerUniquenessDropped`, in one transaction: 404 for a missing, deleted or
/// foreign thread; 409 while a run is active on it; else a new run, whatever the key. The
/// texts are storable already.
pub(crate) async fn start_run_blindly(
    pool: &PgPool,
    key: &str,
    owner: &str,
    thread: &str,
    prompt: &str,
    now: Timestamp,
) -> Result<LaunchOutcome, LedgerError> {
    let mut tx = pool.begin().await.map_err(ledger_error)?;
    let thread_row = sqlx::query("SELECT owner, deleted FROM threads WHERE thread = $1 FOR UPDATE")
        .bind(thread)
        .fetch_optional(&mut *tx)
        .await
        .map_err(ledger_error)?;
    let usable = match &thread_row {
        Some(r) => {
            let t_owner: String = r.try_get("owner").map_err(ledger_error)?;
            let deleted: bool = r.try_get("deleted").map_err(ledger_error)?;
            !deleted && t_owner == owner
        }
        None => false,
    };
    if !usable {
        tx.commit().await.map_err(ledger_error)?;
        return Ok(LaunchOutcome::ThreadGone);
    }
    let busy = sqlx::query(
        "SELECT 1 FROM runs WHERE thread = $1 AND status IN ('pending', 'running') LIMIT 1",
    )
    .bind(thread)
    .fetch_optional(&mut *tx)
    .await
    .map_err(ledger_error)?;
    if busy.is_some() {
        tx.commit().await.map_err(ledger_error)?;
        return Ok(LaunchOutcome::Busy);
    }
    let inserted = sqlx::query(
        "INSERT INTO runs (seq, run_id, key, owner, thread, prompt, status, created_at) \
         SELECT n, 'run-' || n, $1, $2, $3, $4, 'running', $5 \
         FROM (SELECT nextval('run_seq') AS n) s RETURNING run_id",
    )
    .bind(key)
    .bind(owner)
    .bind(thread)
    .bind(prompt)
    .bind(now.as_micros())
    .fetch_one(&mut *tx)
    .await
    .map_err(ledger_error)?;
    let run = RunId(
        inserted
            .try_get::<String, _>("run_id")
            .map_err(ledger_error)?,
    );
    tx.commit().await.map_err(ledger_error)?;
    Ok(LaunchOutcome::Started(run))
}
