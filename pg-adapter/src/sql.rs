//! Every statement `PgStore` and `PgLedger` run, each a named file under `pg-adapter/sql/`
//! (River's style): `store/` for the store, `ledger/` for the run ledger. The files are the
//! statements as Postgres gets them — read and review them there; each starts with what it does
//! and what its parameters are. SQL that several statements share is written once and filled in
//! at compile time (`template.rs`): the whole-row column list (`store/task_columns.sql`, at
//! `{task_columns}`), and the three loops' lease releases, one statement (`store/release.sql`)
//! filled in with the loop (`{loop}`) and its rescheduling (`{reschedule}`).
//!
//! Claims are one `UPDATE … FROM (SELECT … ORDER BY due, id LIMIT n FOR UPDATE SKIP LOCKED)`.
//! Guarded writes are one statement per batch:
//!
//! ```text
//! WITH batch   AS (unnest of the batch's arrays WITH ORDINALITY: one row per write, ord),
//!      locked  AS (the batch's rows, locked FOR UPDATE in id order: no deadlock between batches),
//!      checked AS (batch LEFT JOIN locked: the refusal of each write, in the order of the core
//!                  guard, plus the flags of the transition computed from the locked row),
//!      updated AS (UPDATE tasks … WHERE checked.refusal IS NULL AND <the guard again> RETURNING …)
//! SELECT per batch position: the refusal, or the outbox after the write
//! ```
//!
//! The transition itself (record_event, apply_action, cancel::apply, the releases) is written as
//! `CASE` expressions over the row's current values, so a poll write never clobbers notification
//! columns that the notify loop wrote a moment before. Delays that depend on a counter are passed
//! in as an array of due times indexed by the counter (exactly `now + retry_delay(n)`, with the
//! same saturation as core), so no time arithmetic happens in SQL and `now` is always a
//! parameter.
//!
//! Each guard line of the guarded writes ends in a marker comment (`-- guard: lease_token`,
//! `-- guard: lease_expiry`, `-- guard: cancel_requested`): the planted bugs that live in SQL
//! are these statements with one marker's two lines dropped, derived only with the `mutations`
//! feature (`planted.rs`).

use crate::template::filled;

/// Every column of `tasks`, in table order: the whole row `decode_task` reads.
const TASK_COLUMNS: &str = include_str!("../sql/store/task_columns.sql");

/// A statement that returns whole rows: the file at `$path` with [`TASK_COLUMNS`] filled in.
macro_rules! whole_rows {
    ($path:literal) => {
        filled!(include_str!($path), "{task_columns}", TASK_COLUMNS)
    };
}

/// The release of one loop's leases, written once for the three loops: `release.sql` with the
/// loop's rescheduling (the file at `$reschedule`) filled in, then the loop's column prefix
/// (`$loop`: `poll`, `notify` or `cancel`).
macro_rules! release {
    ($loop:literal, $reschedule:literal) => {{
        const RESCHEDULED: &str = filled!(
            include_str!("../sql/store/release.sql"),
            "{reschedule}",
            include_str!($reschedule)
        );
        filled!(RESCHEDULED, "{loop}", $loop)
    }};
}

/// The guarded writes: the statements the planted lease-guard bugs change.
#[derive(Clone, Copy, Debug)]
pub(crate) struct GuardedWrites {
    /// Poll results (guard::poll_apply, then poll::apply + record_event).
    pub apply_polls: &'static str,
    /// Notification steps (guard::notify_write, then outbox::apply_action).
    pub finish_notifications: &'static str,
    /// Cancel steps (guard::cancel_write, then cancel::apply).
    pub finish_cancels: &'static str,
    /// Answer outcomes (guard::answer_write, then answer::apply).
    pub finish_answers: &'static str,
    /// Releases of a poll lease.
    pub release_poll: &'static str,
    /// Releases of a notification lease.
    pub release_notify: &'static str,
    /// Releases of a cancel lease.
    pub release_cancel: &'static str,
}

/// The guarded writes as they must be.
pub(crate) const GUARDED_WRITES: GuardedWrites = GuardedWrites {
    apply_polls: include_str!("../sql/store/apply_polls.sql"),
    finish_notifications: include_str!("../sql/store/finish_notifications.sql"),
    finish_cancels: include_str!("../sql/store/finish_cancels.sql"),
    finish_answers: include_str!("../sql/store/finish_answers.sql"),
    release_poll: release!("poll", "../sql/store/release_reschedule_poll.sql"),
    release_notify: release!("notify", "../sql/store/release_reschedule_counted.sql"),
    release_cancel: release!("cancel", "../sql/store/release_reschedule_counted.sql"),
};

/// The due poll work, in claim order (`EXPLAIN`-able; `$1` now, `$2` limit).
pub(crate) const POLL_CANDIDATES: &str = include_str!("../sql/store/poll_candidates.sql");
/// The due notification work, in claim order (`EXPLAIN`-able; `$1` now, `$2` limit).
pub(crate) const NOTIFY_CANDIDATES: &str = include_str!("../sql/store/notify_candidates.sql");
/// The due cancel work, in claim order (`EXPLAIN`-able; `$1` now, `$2` limit).
pub(crate) const CANCEL_CANDIDATES: &str = include_str!("../sql/store/cancel_candidates.sql");

/// Claims poll work.
pub(crate) const CLAIM_POLL: &str = whole_rows!("../sql/store/claim_poll.sql");
/// Claims notification work, freezing the snapshot.
pub(crate) const CLAIM_NOTIFY: &str = whole_rows!("../sql/store/claim_notify.sql");
/// Claims cancel work.
pub(crate) const CLAIM_CANCEL: &str = whole_rows!("../sql/store/claim_cancel.sql");

/// Inserts a whole row.
pub(crate) const INSERT_TASK: &str = include_str!("../sql/store/insert_task.sql");
/// A submit's row, locked (`$1` id).
pub(crate) const LOCK_INTENT: &str = whole_rows!("../sql/store/lock_intent.sql");
/// Whether another row tracks a submit's handle (`$1` id, `$2` owner, `$3` server, `$4` remote id).
pub(crate) const HANDLE_TRACKED_ELSEWHERE: &str =
    include_str!("../sql/store/handle_tracked_elsewhere.sql");
/// A submit's row after its handle was recorded (the insert's parameters).
pub(crate) const RECORD_HANDLE: &str = include_str!("../sql/store/record_handle.sql");
/// Deletes a submit's intent (`$1` id).
pub(crate) const WITHDRAW_SUBMIT: &str = include_str!("../sql/store/withdraw_submit.sql");
/// A cancel request in scope.
pub(crate) const REQUEST_CANCEL: &str = include_str!("../sql/store/request_cancel.sql");
/// An operator's requeue of a dead-lettered notification.
pub(crate) const REQUEUE_DEAD_LETTER: &str = include_str!("../sql/store/requeue_dead_letter.sql");
/// Polls brought forward after an outage, or on an operator's request.
pub(crate) const POLL_SOONER: &str = include_str!("../sql/store/poll_sooner.sql");
/// An operator's requeue of a cancel dead letter.
pub(crate) const REQUEUE_CANCEL_DEAD_LETTER: &str =
    include_str!("../sql/store/requeue_cancel_dead_letter.sql");
/// An answer to an input request, in scope.
pub(crate) const RECORD_ANSWER: &str = include_str!("../sql/store/record_answer.sql");
/// The caller's tasks in a thread, newest first.
pub(crate) const LIST_TASKS: &str = whole_rows!("../sql/store/list_tasks.sql");
/// The caller's tasks, most recently updated first, at most a limit.
pub(crate) const LIST_RECENT_TASKS: &str = whole_rows!("../sql/store/list_recent_tasks.sql");
/// Retention: deletes settled, finished rows and their ended runs.
pub(crate) const PRUNE_FINISHED: &str = include_str!("../sql/store/prune_finished.sql");
/// One task in scope.
pub(crate) const GET_TASK: &str = whole_rows!("../sql/store/get_task.sql");
/// Rows after an id, in id order (operators).
pub(crate) const ADMIN_ROWS: &str = whole_rows!("../sql/store/admin_rows.sql");
/// Operator counts.
pub(crate) const OVERVIEW: &str = include_str!("../sql/store/overview.sql");
/// The database's clock (the skew guard).
pub(crate) const STORE_TIME: &str = include_str!("../sql/store/store_time.sql");
/// The backlog of the three loops and the current dead letters (`$1` now, `$2` overdue before,
/// `$3` cap), read through the claims' partial indexes.
pub(crate) const BACKLOG: &str = include_str!("../sql/store/backlog.sql");
/// The backlog's transaction: read-only, with its own statement timeout (`$1`).
pub(crate) const BACKLOG_TIMEOUT: &str = include_str!("../sql/store/backlog_timeout.sql");

/// The run ledger's statements.
pub(crate) mod ledger {
    /// Starts one run (`tasklatch_start_run`).
    pub(crate) const START_RUN: &str = include_str!("../sql/ledger/start_run.sql");
    /// Starts a batch of runs in one transaction (`tasklatch_start_runs`).
    pub(crate) const START_RUNS: &str = include_str!("../sql/ledger/start_runs.sql");
    /// One run's status.
    pub(crate) const RUN_STATUS: &str = include_str!("../sql/ledger/run_status.sql");
    /// Many runs' statuses.
    pub(crate) const RUN_STATUSES: &str = include_str!("../sql/ledger/run_statuses.sql");
    /// Creates a thread.
    pub(crate) const CREATE_THREAD: &str = include_str!("../sql/ledger/create_thread.sql");
    /// Creates many threads.
    pub(crate) const CREATE_THREADS: &str = include_str!("../sql/ledger/create_threads.sql");
    /// Marks a thread deleted.
    pub(crate) const DELETE_THREAD: &str = include_str!("../sql/ledger/delete_thread.sql");
    /// Ends one active run.
    pub(crate) const FINISH_RUN: &str = include_str!("../sql/ledger/finish_run.sql");
    /// Ends many active runs.
    pub(crate) const FINISH_RUNS: &str = include_str!("../sql/ledger/finish_runs.sql");
    /// The active runs, oldest first.
    pub(crate) const ACTIVE_RUNS: &str = include_str!("../sql/ledger/active_runs.sql");
    /// Every run, in creation order.
    pub(crate) const RUNS: &str = include_str!("../sql/ledger/runs.sql");
}

/// The session `tasklatch migrate` runs in (`$1` the schema).
pub(crate) const MIGRATION_SESSION: &str = include_str!("../sql/admin/migration_session.sql");
/// Whether a schema holds a migration history (`$1` the schema).
pub(crate) const HISTORY_EXISTS: &str = include_str!("../sql/admin/history_exists.sql");
/// The other schemas holding a `_sqlx_migrations` table (`$1` the configured schema).
pub(crate) const MIGRATION_HISTORIES: &str = include_str!("../sql/admin/migration_histories.sql");
/// Whether one history records a migration (`HISTORY` replaced by the quoted table name).
pub(crate) const HISTORY_RECORDS: &str = include_str!("../sql/admin/history_records.sql");
/// What a new pooled connection really got: its schema and timeouts, with their sources.
pub(crate) const SESSION_CHECK: &str = include_str!("../sql/admin/session_check.sql");
/// This connection's synchronous_commit, the synchronous standby names and the standbys.
pub(crate) const REPLICATION: &str = include_str!("../sql/admin/replication.sql");
/// Whether this server takes writes: in recovery, and transaction_read_only.
pub(crate) const PRIMARY_CHECK: &str = include_str!("../sql/admin/primary_check.sql");
/// Which backend answers this connection (`sql/admin/backend_pid.sql`, the pooling probe).
pub(crate) const BACKEND_PID: &str = include_str!("../sql/admin/backend_pid.sql");

/// Helpers for the tests that read the statement files.
#[cfg(test)]
pub(crate) mod text {
    /// The statement without its comment lines, its whitespace collapsed to single spaces.
    pub fn normalised(sql: &str) -> String {
        sql.lines()
            .filter(|l| !l.trim_start().starts_with("--"))
            .flat_map(str::split_whitespace)
            .collect::<Vec<_>>()
            .join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::text::normalised;
    use super::*;

    fn all_statements() -> Vec<&'static str> {
        let g = GUARDED_WRITES;
        vec![
            g.apply_polls,
            g.finish_notifications,
            g.finish_cancels,
            g.release_poll,
            g.release_notify,
            g.release_cancel,
            POLL_CANDIDATES,
            NOTIFY_CANDIDATES,
            CANCEL_CANDIDATES,
            CLAIM_POLL,
            CLAIM_NOTIFY,
            CLAIM_CANCEL,
            INSERT_TASK,
            LOCK_INTENT,
            HANDLE_TRACKED_ELSEWHERE,
            RECORD_HANDLE,
            WITHDRAW_SUBMIT,
            REQUEST_CANCEL,
            REQUEUE_DEAD_LETTER,
            LIST_TASKS,
            LIST_RECENT_TASKS,
            GET_TASK,
            ADMIN_ROWS,
            OVERVIEW,
            STORE_TIME,
            BACKLOG,
            BACKLOG_TIMEOUT,
            ledger::START_RUN,
            ledger::START_RUNS,
            ledger::RUN_STATUS,
            ledger::RUN_STATUSES,
            ledger::CREATE_THREAD,
            ledger::CREATE_THREADS,
            ledger::DELETE_THREAD,
            ledger::FINISH_RUN,
            ledger::FINISH_RUNS,
            ledger::ACTIVE_RUNS,
            ledger::RUNS,
        ]
    }

    #[test]
    fn each_claim_picks_exactly_its_candidates() {
        // The candidate queries are what `EXPLAIN` is run on (bench, index test): they must be
        // the claims' own row selection, word for word.
        for (claim, candidates) in [
            (CLAIM_POLL, POLL_CANDIDATES),
            (CLAIM_NOTIFY, NOTIFY_CANDIDATES),
            (CLAIM_CANCEL, CANCEL_CANDIDATES),
        ] {
            let picked = format!(
                "WITH picked AS ( {} FOR UPDATE SKIP LOCKED ),",
                normalised(candidates)
            );
            assert!(normalised(claim).starts_with(&picked), "{claim}");
        }
    }

    #[test]
    fn the_backlog_counts_exactly_the_claims_candidates() {
        // Due, overdue and oldest due are read from one read per loop with the claim's own
        // WHERE clause and order (and so its partial index): a change to a claim's conditions
        // must change the backlog too.
        let backlog = normalised(BACKLOG);
        for (kind, candidates) in [
            ("poll", POLL_CANDIDATES),
            ("notify", NOTIFY_CANDIDATES),
            ("cancel", CANCEL_CANDIDATES),
        ] {
            let c = normalised(candidates);
            let body = c.strip_prefix("SELECT id FROM tasks WHERE ").unwrap();
            let (conditions, order) = body.split_once(" ORDER BY ").unwrap();
            let due = order.strip_suffix(", id LIMIT $2").unwrap();
            let read = format!(
                "{kind} AS ( SELECT {due} AS due_at FROM tasks WHERE {conditions} ORDER BY {due}, \
                 id LIMIT $3 )"
            );
            assert!(backlog.contains(&read), "{kind}: {read}\nnot in\n{backlog}");
        }
    }

    #[test]
    fn whole_row_statements_name_every_column_in_table_order() {
        // That `task_columns.sql` is every column in table order is checked against the
        // migrated table (tests/task_columns.rs).
        let columns = normalised(TASK_COLUMNS);
        for sql in [
            CLAIM_POLL,
            CLAIM_NOTIFY,
            CLAIM_CANCEL,
            LIST_TASKS,
            LIST_RECENT_TASKS,
            GET_TASK,
            LOCK_INTENT,
            ADMIN_ROWS,
        ] {
            assert!(
                normalised(sql).contains(&format!("SELECT {columns} FROM ")),
                "{sql}"
            );
        }
        // A new task has no answer: the insert names every column but the answer ones, which
        // take their defaults (migration 0006).
        let inserted: Vec<&str> = columns
            .split(", ")
            .filter(|c| !c.starts_with("answer_"))
            .collect();
        let values: Vec<String> = (1..=inserted.len()).map(|n| format!("${n}")).collect();
        assert_eq!(
            normalised(INSERT_TASK),
            format!(
                "INSERT INTO tasks ( {} ) VALUES ( {} )",
                inserted.join(", "),
                values.join(", ")
            )
        );
    }

    #[test]
    fn statements_can_be_extended_and_are_one_statement_each() {
        // The bench appends `FOR UPDATE SKIP LOCKED` to a candidate query; a trailing comment or
        // semicolon would swallow or break that, and no file may hold two statements.
        for sql in all_statements() {
            let last = sql.lines().rev().find(|l| !l.trim().is_empty()).unwrap();
            assert!(!last.trim_start().starts_with("--"), "{sql}");
            assert!(!normalised(sql).contains(';'), "{sql}");
            assert!(!normalised(sql).is_empty());
        }
    }

    #[test]
    fn every_template_hole_is_filled() {
        // `filled!` fails the build when a hole is missing from its template, not when a
        // template holds a hole nothing fills: Postgres would reject the statement.
        for sql in all_statements() {
            assert!(!normalised(sql).contains('{'), "{sql}");
        }
    }

    /// The `record_event` part of a statement's `SET` list, `now` spelled `$now`.
    fn record_event_set(sql: &str) -> String {
        let block: Vec<&str> = sql
            .lines()
            .skip_while(|l| !l.trim_start().starts_with("-- outbox::record_event"))
            .skip(1)
            .take_while(|l| !l.trim_start().starts_with("FROM checked"))
            .collect();
        assert!(block.len() > 10, "{sql}");
        block
            .into_iter()
            .filter(|l| !l.ends_with("-- hand_off"))
            .collect::<Vec<_>>()
            .join("\n")
            .replace("$19", "$now")
            .replace("$20", "$now")
    }

    #[test]
    fn polls_and_cancels_record_events_alike() {
        // record_event is written out twice (a poll result and a finished cancel both record
        // an event): the two copies must stay the same.
        assert_eq!(
            record_event_set(GUARDED_WRITES.apply_polls),
            record_event_set(GUARDED_WRITES.finish_cancels)
        );
    }

    #[test]
    fn guarded_writes_check_every_guard() {
        let g = GUARDED_WRITES;
        for (kind, sql) in [
            ("poll", g.apply_polls),
            ("notify", g.finish_notifications),
            ("cancel", g.finish_cancels),
            ("poll", g.release_poll),
            ("notify", g.release_notify),
            ("cancel", g.release_cancel),
        ] {
            let sql = normalised(sql);
            for guard in [
                format!("locked.{kind}_lease_token <> batch.lease_token"),
                format!("task.{kind}_lease_token = checked.lease_token"),
                "THEN 'lease_expired'".to_owned(),
                format!("task.{kind}_lease_expires_at > "),
            ] {
                assert!(sql.contains(&guard), "{kind}: {guard}");
            }
        }
        assert!(normalised(g.apply_polls).contains("THEN 'cancel_requested'"));
        assert!(normalised(g.apply_polls).contains("AND task.cancel_status <> 'requested'"));
    }
}
