//! The planted bugs that live in SQL (`tasklatch_core::mutation`, feature `mutations` only):
//! nothing here exists in a normal build, so none of it can run in production.
//!
//! - `LeaseTokenNotChecked`, `LeaseExpiryNotChecked`, `PollAppliedAfterCancel`: the guarded
//!   writes of `sql/store/` without their two guard lines — the refusal and the same check again
//!   on the row being updated. Each guard line ends in a marker comment (`-- guard: lease_token`,
//!   `-- guard: lease_expiry`, `-- guard: cancel_requested`); a mutant's statement is the correct
//!   one with the lines of its marker dropped, derived here rather than kept as a copy.
//! - `LedgerUniquenessDropped`: the run ledger's unique key index is dropped and a launch inserts
//!   its run blindly — the same thread checks as the real ledger, no key lookup.

use crate::error::ledger_error;
use crate::sql::{GuardedWrites, GUARDED_WRITES};
use sqlx::{PgPool, Row};
use std::sync::OnceLock;
use tasklatch_core::ids::RunId;
use tasklatch_core::ledger::LedgerError;
use tasklatch_core::mutation::Mutant;
use tasklatch_core::ports::LaunchOutcome;
use tasklatch_core::time::Timestamp;

/// `sql` without the lines that end in `marker` (leaked once per mutant: test builds only).
fn without(sql: &'static str, marker: &str) -> &'static str {
    if !sql.contains(marker) {
        return sql;
    }
    let kept: Vec<&str> = sql.lines().filter(|l| !l.ends_with(marker)).collect();
    Box::leak(kept.join("\n").into_boxed_str())
}

/// The guarded writes with the guard lines of `marker` dropped.
fn dropping(marker: &str) -> GuardedWrites {
    let g = GUARDED_WRITES;
    GuardedWrites {
        apply_polls: without(g.apply_polls, marker),
        finish_notifications: without(g.finish_notifications, marker),
        finish_cancels: without(g.finish_cancels, marker),
        finish_answers: without(g.finish_answers, marker),
        release_poll: without(g.release_poll, marker),
        release_notify: without(g.release_notify, marker),
        release_cancel: without(g.release_cancel, marker),
    }
}

/// `LedgerUniquenessDropped`: drops the key's unique index.
const DROP_KEY_INDEX: &str =
    include_str!("../sql/mutants/ledger_uniqueness_dropped/drop_key_index.sql");
/// `LedgerUniquenessDropped`: locks the thread.
const LOCK_THREAD: &str = include_str!("../sql/mutants/ledger_uniqueness_dropped/lock_thread.sql");
/// `LedgerUniquenessDropped`: whether a run is active on the thread.
const THREAD_BUSY: &str = include_str!("../sql/mutants/ledger_uniqueness_dropped/thread_busy.sql");
/// `LedgerUniquenessDropped`: inserts a run whatever its key.
const INSERT_RUN_BLINDLY: &str =
    include_str!("../sql/mutants/ledger_uniqueness_dropped/insert_run_blindly.sql");

/// The guarded writes under `mutant`: its SQL variant if it has one, else the correct ones.
pub(crate) fn guarded_writes(mutant: Option<Mutant>) -> GuardedWrites {
    static DERIVED: [OnceLock<GuardedWrites>; 3] =
        [OnceLock::new(), OnceLock::new(), OnceLock::new()];
    let (slot, marker) = match mutant {
        Some(Mutant::LeaseTokenNotChecked) => (0, "-- guard: lease_token"),
        Some(Mutant::LeaseExpiryNotChecked) => (1, "-- guard: lease_expiry"),
        Some(Mutant::PollAppliedAfterCancel) => (2, "-- guard: cancel_requested"),
        _ => return GUARDED_WRITES,
    };
    *DERIVED[slot].get_or_init(|| dropping(marker))
}

/// Drops the runs table's unique key index (in the database behind `pool`: use a throwaway one).
pub(crate) async fn drop_key_uniqueness(pool: &PgPool) -> Result<(), LedgerError> {
    sqlx::query(DROP_KEY_INDEX)
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
    let thread_row = sqlx::query(LOCK_THREAD)
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
    let busy = sqlx::query(THREAD_BUSY)
        .bind(thread)
        .fetch_optional(&mut *tx)
        .await
        .map_err(ledger_error)?;
    if busy.is_some() {
        tx.commit().await.map_err(ledger_error)?;
        return Ok(LaunchOutcome::Busy);
    }
    let inserted = sqlx::query(INSERT_RUN_BLINDLY)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The statement's lines after its leading comment.
    fn body(sql: &str) -> Vec<&str> {
        sql.lines().skip_while(|l| l.starts_with("--")).collect()
    }

    /// Each mutant's guarded write is the correct one minus exactly two lines — those holding
    /// `guards` — and nothing else.
    fn assert_two_lines_dropped(correct: &str, mutant: &str, guards: [&str; 2]) {
        let kept: Vec<&str> = body(correct)
            .into_iter()
            .filter(|l| !guards.iter().any(|g| l.contains(g)))
            .collect();
        assert_eq!(body(correct).len(), kept.len() + 2, "{guards:?}\n{correct}");
        assert_eq!(body(mutant), kept, "{guards:?}");
    }

    fn pairs(m: &GuardedWrites) -> [(&'static str, &'static str); 6] {
        let g = GUARDED_WRITES;
        [
            (g.apply_polls, m.apply_polls),
            (g.finish_notifications, m.finish_notifications),
            (g.finish_cancels, m.finish_cancels),
            (g.release_poll, m.release_poll),
            (g.release_notify, m.release_notify),
            (g.release_cancel, m.release_cancel),
        ]
    }

    #[test]
    fn each_sql_mutant_drops_only_its_own_guard() {
        for (correct, mutant) in pairs(&guarded_writes(Some(Mutant::LeaseTokenNotChecked))) {
            let guards = [
                "_lease_token <> batch.lease_token",
                "_lease_token = checked.lease_token",
            ];
            assert_two_lines_dropped(correct, mutant, guards);
        }
        for (correct, mutant) in pairs(&guarded_writes(Some(Mutant::LeaseExpiryNotChecked))) {
            assert_two_lines_dropped(correct, mutant, ["'lease_expired'", "_lease_expires_at > "]);
        }
        let cancel = ["'cancel_requested'", "task.cancel_status <> 'requested'"];
        for (i, (correct, mutant)) in pairs(&guarded_writes(Some(Mutant::PollAppliedAfterCancel)))
            .into_iter()
            .enumerate()
        {
            if i == 0 {
                assert_two_lines_dropped(correct, mutant, cancel);
            } else {
                assert_eq!(correct, mutant);
            }
        }
    }

    #[test]
    fn only_the_lease_guard_mutants_change_the_store() {
        let correct = GUARDED_WRITES.apply_polls;
        for m in [
            Mutant::FingerprintCheckSkipped,
            Mutant::LedgerUniquenessDropped,
        ] {
            assert_eq!(guarded_writes(Some(m)).apply_polls, correct);
        }
        assert_eq!(guarded_writes(None).apply_polls, correct);
        for m in [
            Mutant::LeaseTokenNotChecked,
            Mutant::LeaseExpiryNotChecked,
            Mutant::PollAppliedAfterCancel,
        ] {
            assert_ne!(guarded_writes(Some(m)).apply_polls, correct, "{m}");
        }
    }
}
