//! The backlog: how much work waits for each of the three loops, and how many dead letters are
//! there now — an operator's view of the Postgres store, read for the worker's gauges
//! (`tasklatch_backlog_*`). A method of [`PgStore`] only, not of the core `Store` trait: the
//! model has no use for it and the simulation never reads it.
//!
//! One read-only transaction of two statements (`sql/store/backlog_timeout.sql`, then
//! `sql/store/backlog.sql`): the first gives the second a statement timeout of its own
//! ([`BacklogRequest::timeout`], shorter than the session's), and every count stops at
//! [`BacklogRequest::cap`] rows. The due and overdue counts and the oldest due time are read
//! through the claims' own partial indexes (their `WHERE` clauses are the claims', word for
//! word), the dead letters through `tasks_dead_letters` (migration 0026, whose condition the
//! query repeats), at most `cap` of them.

use crate::error::store_error;
use crate::session::millis;
use crate::sql;
use crate::store::{col, u64_col};
use crate::PgStore;
use sqlx::postgres::PgRow;
use std::time::Duration;
use tasklatch_core::lease::LeaseKind;
use tasklatch_core::status::DeadLetterReason;
use tasklatch_core::store::StoreError;
use tasklatch_core::time::{micros_of, Timestamp};

/// The default [`BacklogRequest::cap`]: no count reads more rows than this.
pub const DEFAULT_BACKLOG_CAP: u64 = 10_000;
/// The default [`BacklogRequest::timeout`].
pub const DEFAULT_BACKLOG_TIMEOUT: Duration = Duration::from_secs(2);

/// The kinds and reasons of dead letters [`Backlog::dead_letters`] counts, in its order: kind
/// `notify` (a notification, `row.outbox`) or `cancel` (the cancel work), spelled as
/// `tasklatch dead-letters list` prints them; reasons as [`DeadLetterReason::as_str`].
pub const DEAD_LETTER_SERIES: [(&str, DeadLetterReason); 5] = [
    ("notify", DeadLetterReason::ThreadGone),
    ("notify", DeadLetterReason::Budget),
    ("notify", DeadLetterReason::Unavailable),
    ("cancel", DeadLetterReason::Budget),
    ("cancel", DeadLetterReason::Unavailable),
];

/// What [`PgStore::backlog`] reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BacklogRequest {
    /// The moment the backlog is read at (the caller's clock, as for claims).
    pub now: Timestamp,
    /// A due row is overdue once it has been due for longer than this.
    pub overdue_after: Duration,
    /// Each count stops after this many rows (at least 1): a count equal to it means "at
    /// least"; the dead letters read at most this many rows in all.
    pub cap: u64,
    /// The statement's timeout (at least 1 ms): a read that takes longer fails as unavailable.
    pub timeout: Duration,
}

impl BacklogRequest {
    /// The backlog at `now`, overdue after `overdue_after`, with the default cap and timeout.
    pub fn new(now: Timestamp, overdue_after: Duration) -> Self {
        BacklogRequest {
            now,
            overdue_after,
            cap: DEFAULT_BACKLOG_CAP,
            timeout: DEFAULT_BACKLOG_TIMEOUT,
        }
    }
}

/// The work waiting for one loop: the rows its claim would pick at the request's `now`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LoopBacklog {
    /// Rows due now, lease free or expired (at most the cap).
    pub due: u64,
    /// Of those, the rows due for longer than the threshold (at most the cap).
    pub overdue: u64,
    /// The earliest due time among the due rows; `None` when none is due.
    pub oldest_due: Option<Timestamp>,
}

impl LoopBacklog {
    /// How long the oldest due row has been due at `now`; zero when none is due.
    pub fn oldest_due_age(&self, now: Timestamp) -> Duration {
        self.oldest_due.map_or(Duration::ZERO, |due| now.since(due))
    }
}

/// What [`PgStore::backlog`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Backlog {
    /// The request's `now`: the moment the ages are measured from.
    pub now: Timestamp,
    /// The poll loop's work.
    pub poll: LoopBacklog,
    /// The notification loop's work.
    pub notify: LoopBacklog,
    /// The cancel loop's work.
    pub cancel: LoopBacklog,
    /// The current dead letters of each of [`DEAD_LETTER_SERIES`], in its order (lower bounds
    /// when there are more than the cap in all).
    pub dead_letters: [u64; 5],
}

impl Backlog {
    /// The work waiting for loop `kind`.
    pub fn of(&self, kind: LeaseKind) -> &LoopBacklog {
        match kind {
            LeaseKind::Poll => &self.poll,
            LeaseKind::Notify => &self.notify,
            LeaseKind::Cancel => &self.cancel,
        }
    }

    /// The current dead letters of `kind` (`notify` or `cancel`) given up for `reason`; 0 for
    /// a pair not in [`DEAD_LETTER_SERIES`].
    pub fn dead_letters_of(&self, kind: &str, reason: DeadLetterReason) -> u64 {
        DEAD_LETTER_SERIES
            .iter()
            .position(|(k, r)| *k == kind && *r == reason)
            .map_or(0, |i| self.dead_letters[i])
    }
}

impl PgStore {
    /// The backlog of the three loops and the current dead letters at `req.now` (see the
    /// module). One read-only transaction; fails as [`StoreError::Unavailable`] when the
    /// database does not answer within `req.timeout` (or the session's limits), and as
    /// [`StoreError::Invalid`] for a cap of 0. Changes nothing and takes no row lock.
    pub async fn backlog(&self, req: BacklogRequest) -> Result<Backlog, StoreError> {
        if req.cap == 0 {
            return Err(StoreError::Invalid("a backlog cap is at least 1".into()));
        }
        let overdue_before = req
            .now
            .as_micros()
            .saturating_sub(micros_of(req.overdue_after));
        let mut tx = self.pool().begin().await.map_err(store_error)?;
        sqlx::query(sql::BACKLOG_TIMEOUT)
            .bind(millis(req.timeout))
            .execute(&mut *tx)
            .await
            .map_err(store_error)?;
        let row = sqlx::query(sql::BACKLOG)
            .bind(req.now.as_micros())
            .bind(overdue_before)
            .bind(i64::try_from(req.cap).unwrap_or(i64::MAX))
            .fetch_one(&mut *tx)
            .await
            .map_err(store_error)?;
        tx.commit().await.map_err(store_error)?;
        decode(&row, req.now)
    }
}

/// The backlog in `row` (the columns of `backlog.sql`), read at `now`.
fn decode(row: &PgRow, now: Timestamp) -> Result<Backlog, StoreError> {
    let of = |kind: LeaseKind| -> Result<LoopBacklog, StoreError> {
        let name = kind.as_str();
        Ok(LoopBacklog {
            due: u64_col(row, &format!("{name}_due"))?,
            overdue: u64_col(row, &format!("{name}_overdue"))?,
            oldest_due: col::<Option<i64>>(row, &format!("{name}_oldest_due"))?
                .map(Timestamp::from_micros),
        })
    };
    let mut dead_letters = [0; 5];
    for (n, (kind, reason)) in dead_letters.iter_mut().zip(DEAD_LETTER_SERIES) {
        *n = u64_col(row, &format!("dl_{kind}_{}", reason.as_str()))?;
    }
    Ok(Backlog {
        now,
        poll: of(LeaseKind::Poll)?,
        notify: of(LeaseKind::Notify)?,
        cancel: of(LeaseKind::Cancel)?,
        dead_letters,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_due_age_is_measured_from_now_and_zero_without_due_rows() {
        let now = Timestamp::from_micros(90_000_000);
        let due = LoopBacklog {
            due: 2,
            overdue: 1,
            oldest_due: Some(Timestamp::from_micros(15_500_000)),
        };
        assert_eq!(due.oldest_due_age(now), Duration::from_micros(74_500_000));
        assert_eq!(LoopBacklog::default().oldest_due_age(now), Duration::ZERO);
    }

    #[test]
    fn dead_letters_are_found_by_kind_and_reason() {
        let b = Backlog {
            now: Timestamp::EPOCH,
            poll: LoopBacklog::default(),
            notify: LoopBacklog::default(),
            cancel: LoopBacklog::default(),
            dead_letters: [1, 2, 3, 4, 5],
        };
        assert_eq!(b.dead_letters_of("notify", DeadLetterReason::Budget), 2);
        assert_eq!(
            b.dead_letters_of("cancel", DeadLetterReason::Unavailable),
            5
        );
        assert_eq!(b.dead_letters_of("cancel", DeadLetterReason::ThreadGone), 0);
    }
}
