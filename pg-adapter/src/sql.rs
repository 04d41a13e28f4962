//! Every statement `PgStore` runs, named and reviewed in one place (River's style).
//!
//! Claims are one `UPDATE … FROM (SELECT … ORDER BY due, id LIMIT n FOR UPDATE SKIP LOCKED)`.
//! Guarded writes are one statement per batch:
//!
//! ```text
//! WITH i AS (unnest of the batch's arrays WITH ORDINALITY),
//!      p AS (the batch's rows, locked FOR UPDATE in id order: no deadlock between batches),
//!      c AS (i LEFT JOIN p: the refusal of each write, in the order of the core guard,
//!            plus the flags of the transition computed from the locked row),
//!      u AS (UPDATE tasks … WHERE c.refusal IS NULL AND <the lease guard again> RETURNING …)
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
//! Planted bugs ([`Mutant::lives_in_sql`]) change only the guard fragments below.

use sqlx::{AssertSqlSafe, SqlSafeStr, SqlStr};
use std::sync::Arc;
use tasklatch_core::mutation::Mutant;

/// Terminal remote statuses, as an SQL list.
pub(crate) const TERMINAL: &str = "('completed', 'failed', 'cancelled')";

/// Which guard checks are in force. All true except under a planted bug.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Checks {
    /// Compare the lease token (not only the owner).
    pub token: bool,
    /// Refuse a lease that expired at the write's time.
    pub expiry: bool,
    /// Refuse poll results after a cancel request.
    pub cancel: bool,
}

impl Checks {
    /// The checks under `mutant` (only SQL-lived mutants change anything).
    pub fn under(mutant: Option<Mutant>) -> Self {
        Checks {
            token: mutant != Some(Mutant::LeaseTokenNotChecked),
            expiry: mutant != Some(Mutant::LeaseExpiryNotChecked),
            cancel: mutant != Some(Mutant::PollAppliedAfterCancel),
        }
    }
}

/// The prepared texts of one store's statements.
pub(crate) struct Sql {
    pub claim_poll: SqlStr,
    pub claim_notify: SqlStr,
    pub claim_cancel: SqlStr,
    pub apply_polls: SqlStr,
    pub finish_notifications: SqlStr,
    pub finish_cancels: SqlStr,
    pub release_poll: SqlStr,
    pub release_notify: SqlStr,
    pub release_cancel: SqlStr,
}

fn shared(text: String) -> SqlStr {
    AssertSqlSafe(Arc::<str>::from(text)).into_sql_str()
}

/// The refusal `CASE` arms of a lease guard on lease `kind` (`poll`, `notify`, `cancel`), for the
/// locked row `p` and the write `i`, at time `at` — in the order of `lease::check_lease`.
fn refusal_arms(kind: &str, at: &str, checks: Checks) -> String {
    let token = if checks.token {
        format!(" OR p.{kind}_lease_token <> i.lease_token")
    } else {
        String::new()
    };
    let mut arms = format!(
        "WHEN p.id IS NULL THEN 'no_such_task' \
         WHEN p.{kind}_lease_owner IS NULL OR p.{kind}_lease_owner <> i.lease_owner{token} \
         THEN 'lease_not_held' "
    );
    if checks.expiry {
        arms.push_str(&format!(
            "WHEN p.{kind}_lease_expires_at <= {at} THEN 'lease_expired' "
        ));
    }
    arms
}

/// The lease guard of lease `kind` on the row being updated (`t`) for write `c`, at time `at`.
fn where_guard(kind: &str, at: &str, checks: Checks) -> String {
    let mut g = format!("t.{kind}_lease_owner = c.lease_owner");
    if checks.token {
        g.push_str(&format!(" AND t.{kind}_lease_token = c.lease_token"));
    }
    if checks.expiry {
        g.push_str(&format!(" AND t.{kind}_lease_expires_at > {at}"));
    }
    g
}

/// `record_event` flags, computed in `c` from the locked row `p`, gated by `gate`:
/// `clr` (no event: retire the fingerprint), `ch` (a new fingerprint: new version),
/// `drop_` (clear with undelivered work not in flight: settle it), `reo` (reopen the channel).
fn record_flags(gate: &str) -> String {
    format!(
        "({gate}) AND i.fp IS NULL AS clr, \
         ({gate}) AND i.fp IS NOT NULL AND p.fingerprint IS DISTINCT FROM i.fp AS ch, \
         ({gate}) AND i.fp IS NULL \
             AND p.notify_status NOT IN ('claimed', 'dispatched', 'retry') \
             AND p.event_version > p.notified_version AS drop_, \
         ({gate}) AND i.fp IS NOT NULL AND p.fingerprint IS DISTINCT FROM i.fp \
             AND p.notify_status NOT IN ('claimed', 'dispatched', 'retry') AS reo"
    )
}

/// `record_event` (transitions::outbox::record_event) as SET clauses over `t` and the flags of `c`.
fn record_set(now: &str) -> String {
    format!(
        "event_version = CASE WHEN c.ch THEN t.event_version + 1 ELSE t.event_version END, \
         fingerprint = CASE WHEN c.clr THEN NULL WHEN c.ch THEN c.fp ELSE t.fingerprint END, \
         event = CASE WHEN c.clr THEN NULL WHEN c.ch THEN c.ev ELSE t.event END, \
         notified_version = CASE WHEN c.drop_ THEN t.event_version ELSE t.notified_version END, \
         dispatch_event = CASE WHEN c.drop_ OR c.reo THEN NULL ELSE t.dispatch_event END, \
         run_id = CASE WHEN c.drop_ OR c.reo THEN NULL ELSE t.run_id END, \
         notify_status = CASE WHEN c.reo THEN 'pending' \
             WHEN c.drop_ AND t.notify_status = 'pending' THEN 'none' \
             ELSE t.notify_status END, \
         notify_due_at = CASE WHEN c.reo THEN {now} ELSE t.notify_due_at END, \
         dispatch_attempt = CASE WHEN c.reo THEN 0 ELSE t.dispatch_attempt END, \
         notify_failures = CASE WHEN c.reo THEN 0 ELSE t.notify_failures END, \
         notify_last_error = CASE WHEN c.reo THEN NULL ELSE t.notify_last_error END"
    )
}

/// The shape shared by every guarded batch write.
///
/// `input` is the `unnest(…) WITH ORDINALITY AS i(…, ord)` source; `$1` must be the ids array.
/// `refusal` holds the `CASE` arms; `flags` extra columns of `c`; `set` the transition;
/// `guard` the lease guard on `t`; `recorded` the SQL of the `recorded` column.
fn guarded_write(
    input: &str,
    refusal: &str,
    flags: &str,
    set: &str,
    guard: &str,
    recorded: &str,
) -> String {
    let flags = if flags.is_empty() {
        String::new()
    } else {
        format!(", {flags}")
    };
    format!(
        "WITH i AS (SELECT * FROM {input}), \
         p AS MATERIALIZED ( \
             SELECT * FROM tasks WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE), \
         c AS ( \
             SELECT i.*, CASE {refusal} ELSE NULL END AS refusal{flags} \
             FROM i LEFT JOIN p ON p.id = i.id), \
         u AS ( \
             UPDATE tasks t SET {set} \
             FROM c WHERE t.id = c.id AND c.refusal IS NULL AND {guard} \
             RETURNING c.ord, t.event_version, t.notified_version, t.notify_status, \
                 t.fingerprint, {recorded} AS recorded) \
         SELECT c.ord, c.refusal, u.ord IS NOT NULL AS written, u.event_version, \
             u.notified_version, u.notify_status, u.fingerprint, u.recorded \
         FROM c LEFT JOIN u ON u.ord = c.ord ORDER BY c.ord"
    )
}

const RECORDED: &str = "CASE WHEN c.clr THEN 'cleared' WHEN c.ch THEN 'new' ELSE 'unchanged' END";

impl Sql {
    /// The statements of a store under `checks`.
    pub fn new(checks: Checks) -> Self {
        Sql {
            claim_poll: shared(claim_poll()),
            claim_notify: shared(claim_notify()),
            claim_cancel: shared(claim_cancel()),
            apply_polls: shared(apply_polls(checks)),
            finish_notifications: shared(finish_notifications(checks)),
            finish_cancels: shared(finish_cancels(checks)),
            release_poll: shared(release("poll", checks)),
            release_notify: shared(release("notify", checks)),
            release_cancel: shared(release("cancel", checks)),
        }
    }
}

/// The claim's candidate rows (the static part matches the partial index predicate), ordered and
/// limited. `$1` now, `$2` limit.
pub(crate) const POLL_CANDIDATES: &str = "SELECT id FROM tasks \
     WHERE remote_status IN ('submitted', 'working', 'input_required') \
       AND cancel_requested_at IS NULL \
       AND poll_next_at <= $1 \
       AND (poll_lease_expires_at IS NULL OR poll_lease_expires_at <= $1) \
     ORDER BY poll_next_at, id LIMIT $2";

/// See [`POLL_CANDIDATES`].
pub(crate) const NOTIFY_CANDIDATES: &str = "SELECT id FROM tasks \
     WHERE notify_status IN ('pending', 'claimed', 'retry', 'dispatched') \
       AND event_version > notified_version \
       AND notify_due_at <= $1 \
       AND (notify_lease_expires_at IS NULL OR notify_lease_expires_at <= $1) \
     ORDER BY notify_due_at, id LIMIT $2";

/// See [`POLL_CANDIDATES`].
pub(crate) const CANCEL_CANDIDATES: &str = "SELECT id FROM tasks \
     WHERE cancel_status = 'requested' \
       AND cancel_due_at <= $1 \
       AND (cancel_lease_expires_at IS NULL OR cancel_lease_expires_at <= $1) \
     ORDER BY cancel_due_at, id LIMIT $2";

/// `$1` now, `$2` limit, `$3` worker, `$4` lease expiry.
fn claim(candidates: &str, set: &str, due: &str) -> String {
    format!(
        "WITH picked AS ({candidates} FOR UPDATE SKIP LOCKED), \
         claimed AS ( \
             UPDATE tasks t SET {set} FROM picked WHERE t.id = picked.id RETURNING t.*) \
         SELECT {cols} FROM claimed ORDER BY {due}, id",
        cols = crate::task_columns!(),
    )
}

fn claim_poll() -> String {
    claim(
        POLL_CANDIDATES,
        "poll_claims = t.poll_claims + 1, poll_lease_owner = $3, \
         poll_lease_token = t.poll_claims + 1, poll_lease_expires_at = $4",
        "poll_next_at",
    )
}

/// The notification claim freezes the snapshot (transitions::outbox::claim): when there is no
/// frozen snapshot or a newer version with an event exists, `dispatch_version`/`dispatch_event`
/// are rebuilt from the latest event (a new version also resets attempt, failures and run);
/// a dispatched row keeps everything; a pending or refrozen row becomes claimed.
fn claim_notify() -> String {
    let rebuild = "(t.notify_status <> 'dispatched' AND (t.dispatch_event IS NULL \
         OR (t.dispatch_version < t.event_version AND t.event IS NOT NULL)))";
    let reset = format!("({rebuild} AND t.event_version <> t.dispatch_version)");
    claim(
        NOTIFY_CANDIDATES,
        &format!(
            "notify_claims = t.notify_claims + 1, notify_lease_owner = $3, \
             notify_lease_token = t.notify_claims + 1, notify_lease_expires_at = $4, \
             dispatch_attempt = CASE WHEN {reset} THEN 0 ELSE t.dispatch_attempt END, \
             notify_failures = CASE WHEN {reset} THEN 0 ELSE t.notify_failures END, \
             run_id = CASE WHEN {reset} THEN NULL ELSE t.run_id END, \
             dispatch_version = CASE WHEN {rebuild} THEN t.event_version \
                 ELSE t.dispatch_version END, \
             dispatch_event = CASE WHEN {rebuild} THEN t.event ELSE t.dispatch_event END, \
             notify_status = CASE WHEN t.notify_status = 'pending' OR {rebuild} THEN 'claimed' \
                 ELSE t.notify_status END"
        ),
        "notify_due_at",
    )
}

fn claim_cancel() -> String {
    claim(
        CANCEL_CANDIDATES,
        "cancel_claims = t.cancel_claims + 1, cancel_lease_owner = $3, \
         cancel_lease_token = t.cancel_claims + 1, cancel_lease_expires_at = $4",
        "cancel_due_at",
    )
}

/// Poll results (guard::poll_apply, then poll::apply + record_event).
///
/// `$1` ids, `$2` lease owners, `$3` tokens, `$4` completed_at, `$5` status, `$6` result,
/// `$7` truncated, `$8` artifact, `$9` error, `$10` input request, `$11` updated_at,
/// `$12` observed_at, `$13` next poll, `$14` consecutive errors, `$15` error class,
/// `$16` error message, `$17` event JSON, `$18` fingerprint, `$19` now.
fn apply_polls(checks: Checks) -> String {
    let input = "unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::text[], \
         $6::text[], $7::bool[], $8::text[], $9::text[], $10::text[], $11::bigint[], \
         $12::bigint[], $13::bigint[], $14::bigint[], $15::text[], $16::text[], $17::text[], \
         $18::text[]) WITH ORDINALITY AS i(id, lease_owner, lease_token, at, status, result, \
         truncated, artifact, error, input_request, updated_at, observed_at, next_at, errors, \
         err_class, err_msg, ev, fp, ord)";
    let mut refusal = refusal_arms("poll", "i.at", checks);
    let mut guard = where_guard("poll", "c.at", checks);
    if checks.cancel {
        refusal.push_str("WHEN p.cancel_requested_at IS NOT NULL THEN 'cancel_requested' ");
        guard.push_str(" AND t.cancel_requested_at IS NULL");
    }
    refusal.push_str(&format!(
        "WHEN p.remote_status IN {TERMINAL} THEN 'terminal' "
    ));
    guard.push_str(&format!(" AND t.remote_status NOT IN {TERMINAL}"));
    let set = format!(
        "remote_status = c.status, remote_result = c.result, \
         remote_result_truncated = c.truncated, remote_artifact = c.artifact, \
         remote_error = c.error, remote_input_request = c.input_request, \
         remote_updated_at = c.updated_at, remote_observed_at = c.observed_at, \
         poll_next_at = c.next_at, poll_consecutive_errors = c.errors, \
         poll_error_class = c.err_class, poll_error_message = c.err_msg, \
         poll_lease_owner = NULL, poll_lease_token = NULL, poll_lease_expires_at = NULL, {}",
        record_set("$19")
    );
    guarded_write(
        input,
        &refusal,
        &record_flags("true"),
        &set,
        &guard,
        RECORDED,
    )
}

/// Notification steps (guard::notify_write, then outbox::apply_action).
///
/// `$1` ids, `$2` lease owners, `$3` tokens, `$4` dispatch versions, `$5` action kinds,
/// `$6` run ids, `$7` errors (bounded), `$8` now, `$9` now + run_check_interval,
/// `$10` due times `now + retry_delay(n)` for n = 0..=17.
fn finish_notifications(checks: Checks) -> String {
    let input = "unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::text[], \
         $6::text[], $7::text[]) WITH ORDINALITY AS i(id, lease_owner, lease_token, \
         dispatch_version, kind, run, error, ord)";
    let mut refusal = refusal_arms("notify", "$8", checks);
    refusal.push_str("WHEN p.dispatch_version <> i.dispatch_version THEN 'version_moved' ");
    let mut guard = where_guard("notify", "$8", checks);
    guard.push_str(" AND t.dispatch_version = c.dispatch_version");
    let flags = "i.kind IN ('thread_gone', 'run_succeeded', 'budget_exhausted') AS endd, \
         GREATEST(p.notified_version, p.dispatch_version) AS nv1, \
         i.kind IN ('thread_gone', 'run_succeeded', 'budget_exhausted') \
             AND GREATEST(p.notified_version, p.dispatch_version) < p.event_version \
             AND p.event IS NOT NULL AS reo, \
         i.kind IN ('busy', 'launch_failed') AND p.event IS NULL AS dropped, \
         i.kind IN ('launch_failed', 'run_failed', 'lookup_failed') AS fail";
    let set = "notify_lease_owner = NULL, notify_lease_token = NULL, \
         notify_lease_expires_at = NULL, \
         notify_status = CASE \
             WHEN c.kind = 'launched' THEN 'dispatched' \
             WHEN c.kind IN ('busy', 'launch_failed') THEN \
                 CASE WHEN c.dropped THEN 'none' ELSE 'pending' END \
             WHEN c.kind = 'run_failed' THEN 'retry' \
             WHEN c.reo THEN 'pending' \
             WHEN c.kind = 'run_succeeded' THEN 'delivered' \
             WHEN c.endd THEN 'dead_letter' \
             ELSE t.notify_status END, \
         run_id = CASE WHEN c.kind = 'launched' THEN c.run \
             WHEN c.dropped OR c.kind = 'run_failed' OR c.endd THEN NULL \
             ELSE t.run_id END, \
         notify_due_at = CASE \
             WHEN c.kind IN ('launched', 'busy', 'run_pending') THEN $9 \
             WHEN c.fail THEN ($10::bigint[])[LEAST(t.notify_failures + 1, 17) + 1] \
             WHEN c.reo THEN $8 \
             ELSE t.notify_due_at END, \
         notify_failures = CASE WHEN c.fail THEN t.notify_failures + 1 \
             WHEN c.reo THEN 0 ELSE t.notify_failures END, \
         dispatch_attempt = CASE WHEN c.kind = 'run_failed' THEN t.dispatch_attempt + 1 \
             WHEN c.reo THEN 0 ELSE t.dispatch_attempt END, \
         notify_last_error = CASE WHEN c.fail THEN c.error \
             WHEN c.reo THEN NULL ELSE t.notify_last_error END, \
         dispatch_event = CASE WHEN c.kind = 'busy' OR c.endd OR c.dropped THEN NULL \
             ELSE t.dispatch_event END, \
         notified_version = CASE WHEN c.dropped THEN t.event_version \
             WHEN c.endd THEN CASE WHEN c.reo THEN c.nv1 ELSE t.event_version END \
             ELSE t.notified_version END, \
         busy_count = CASE WHEN c.kind = 'busy' THEN LEAST(t.busy_count + 1, 4294967295) \
             ELSE t.busy_count END, \
         dead_letter_version = CASE WHEN c.kind IN ('thread_gone', 'budget_exhausted') \
             THEN t.dispatch_version ELSE t.dead_letter_version END, \
         dead_letter_reason = CASE WHEN c.kind = 'thread_gone' THEN 'thread_gone' \
             WHEN c.kind = 'budget_exhausted' THEN 'budget' \
             ELSE t.dead_letter_reason END";
    guarded_write(input, &refusal, flags, set, &guard, "NULL::text")
}

/// Cancel steps (guard::cancel_write, then cancel::apply).
///
/// `$1` ids, `$2` lease owners, `$3` tokens, `$4` action kinds (`finished`, `failed`,
/// `budget`), `$5` status … `$18` fingerprint as in [`apply_polls`] (`$5`..`$18` the update of a
/// `finished` action), `$19` errors (bounded), `$20` now, `$21` due times
/// `now + retry_delay(n)` for n = 0..=17.
fn finish_cancels(checks: Checks) -> String {
    let input = "unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::text[], \
         $6::text[], $7::bool[], $8::text[], $9::text[], $10::text[], $11::bigint[], \
         $12::bigint[], $13::bigint[], $14::bigint[], $15::text[], $16::text[], $17::text[], \
         $18::text[], $19::text[]) WITH ORDINALITY AS i(id, lease_owner, lease_token, kind, \
         status, result, truncated, artifact, error_text, input_request, updated_at, \
         observed_at, next_at, errors, err_class, err_msg, ev, fp, error, ord)";
    let refusal = refusal_arms("cancel", "$20", checks);
    let guard = where_guard("cancel", "$20", checks);
    let gate = format!("i.kind = 'finished' AND p.remote_status NOT IN {TERMINAL}");
    let flags = format!("({gate}) AS g, {}", record_flags(&gate));
    let keep = |col: &str, new: &str| format!("{col} = CASE WHEN c.g THEN {new} ELSE t.{col} END");
    let set = [
        "cancel_lease_owner = NULL, cancel_lease_token = NULL, cancel_lease_expires_at = NULL"
            .to_owned(),
        "cancel_status = CASE c.kind WHEN 'finished' THEN 'done' \
             WHEN 'budget' THEN 'dead_letter' ELSE t.cancel_status END"
            .to_owned(),
        "cancel_due_at = CASE c.kind WHEN 'finished' THEN NULL WHEN 'budget' THEN NULL \
             WHEN 'failed' THEN ($21::bigint[])[LEAST(t.cancel_failures + 1, 17) + 1] \
             ELSE t.cancel_due_at END"
            .to_owned(),
        "cancel_failures = CASE WHEN c.kind = 'failed' THEN t.cancel_failures + 1 \
             ELSE t.cancel_failures END"
            .to_owned(),
        "cancel_last_error = CASE WHEN c.kind = 'failed' THEN c.error \
             ELSE t.cancel_last_error END"
            .to_owned(),
        keep("remote_status", "c.status"),
        keep("remote_result", "c.result"),
        keep("remote_result_truncated", "c.truncated"),
        keep("remote_artifact", "c.artifact"),
        keep("remote_error", "c.error_text"),
        keep("remote_input_request", "c.input_request"),
        keep("remote_updated_at", "c.updated_at"),
        keep("remote_observed_at", "c.observed_at"),
        keep("poll_next_at", "c.next_at"),
        keep("poll_consecutive_errors", "c.errors"),
        keep("poll_error_class", "c.err_class"),
        keep("poll_error_message", "c.err_msg"),
        record_set("$20"),
    ]
    .join(", ");
    let recorded = format!("CASE WHEN NOT c.g THEN NULL ELSE {RECORDED} END");
    guarded_write(input, &refusal, &flags, &set, &guard, &recorded)
}

/// Releases of lease `kind` (guard::release, then poll::release / outbox::release /
/// cancel::release). `$1` ids, `$2` lease owners, `$3` tokens, `$4` retry_at, `$5` errors
/// (bounded; NULL for an uncounted release), `$6` now.
fn release(kind: &str, checks: Checks) -> String {
    let input = "unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::text[]) \
         WITH ORDINALITY AS i(id, lease_owner, lease_token, retry_at, error, ord)";
    let refusal = refusal_arms(kind, "$6", checks);
    let guard = where_guard(kind, "$6", checks);
    let clear = format!(
        "{kind}_lease_owner = NULL, {kind}_lease_token = NULL, {kind}_lease_expires_at = NULL"
    );
    let set = match kind {
        "poll" => format!(
            "{clear}, poll_next_at = CASE WHEN t.remote_status IN {TERMINAL} THEN t.poll_next_at \
             ELSE c.retry_at END"
        ),
        "notify" => format!(
            "{clear}, notify_due_at = c.retry_at, \
             notify_failures = CASE WHEN c.error IS NOT NULL THEN t.notify_failures + 1 \
                 ELSE t.notify_failures END, \
             notify_last_error = CASE WHEN c.error IS NOT NULL THEN c.error \
                 ELSE t.notify_last_error END"
        ),
        _ => format!(
            "{clear}, cancel_due_at = c.retry_at, \
             cancel_failures = CASE WHEN c.error IS NOT NULL THEN t.cancel_failures + 1 \
                 ELSE t.cancel_failures END, \
             cancel_last_error = CASE WHEN c.error IS NOT NULL THEN c.error \
                 ELSE t.cancel_last_error END"
        ),
    };
    guarded_write(input, &refusal, "", &set, &guard, "NULL::text")
}

/// Inserts a whole row. Parameters in [`task_columns!`] order.
pub(crate) const INSERT_TASK: &str = concat!(
    "INSERT INTO tasks (",
    crate::task_columns!(),
    ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, \
     $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31, $32, $33, $34, $35, $36, \
     $37, $38, $39, $40, $41, $42, $43, $44, $45, $46, $47, $48, $49, $50, $51, $52)"
);

/// A cancel request in scope (transitions::cancel::request). `$1` owner, `$2` thread,
/// `$3` by name, `$4` id, `$5` name, `$6` now. Locks the candidate rows; changes the row only
/// for a single, non-terminal, not yet requested match (the poll lease is left as it is: the
/// poll guard refuses every result once a cancel is requested). Returns the match count and,
/// per match, its id, status, whether a cancel was already requested and whether it was
/// updated.
pub(crate) const REQUEST_CANCEL: &str = "\
    WITH m AS ( \
        SELECT id, remote_status, cancel_requested_at FROM tasks \
        WHERE owner = $1 AND thread = $2 \
          AND ((NOT $3 AND id = $4) \
               OR ($3 AND name = $5 \
                   AND remote_status NOT IN ('completed', 'failed', 'cancelled'))) \
        ORDER BY id FOR UPDATE), \
    n AS (SELECT count(*) AS matches FROM m), \
    u AS ( \
        UPDATE tasks t SET cancel_requested_at = $6, cancel_status = 'requested', \
            cancel_due_at = $6, remote_updated_at = $6 \
        FROM m, n \
        WHERE t.id = m.id AND n.matches = 1 \
          AND m.remote_status NOT IN ('completed', 'failed', 'cancelled') \
          AND m.cancel_requested_at IS NULL \
          AND t.cancel_requested_at IS NULL \
        RETURNING t.id) \
    SELECT n.matches, m.id, m.remote_status, m.cancel_requested_at IS NOT NULL AS requested, \
        u.id IS NOT NULL AS updated \
    FROM n LEFT JOIN m ON true LEFT JOIN u ON u.id = m.id ORDER BY m.id";

/// The caller's tasks in a thread, newest first. `$1` owner, `$2` thread.
pub(crate) const LIST_TASKS: &str = concat!(
    "SELECT ",
    crate::task_columns!(),
    " FROM tasks WHERE owner = $1 AND thread = $2 ORDER BY created_at DESC, id"
);

/// One task in scope. `$1` owner, `$2` thread, `$3` id.
pub(crate) const GET_TASK: &str = concat!(
    "SELECT ",
    crate::task_columns!(),
    " FROM tasks WHERE id = $3 AND owner = $1 AND thread = $2"
);

/// Rows after an id, in id order. `$1` after (`''` from the start: ids are never empty),
/// `$2` limit.
pub(crate) const ADMIN_ROWS: &str = concat!(
    "SELECT ",
    crate::task_columns!(),
    " FROM tasks WHERE id > $1 ORDER BY id LIMIT $2"
);

/// Operator counts, one scan.
pub(crate) const OVERVIEW: &str = "SELECT count(*) AS tasks, \
     count(*) FILTER (WHERE notify_status = 'none') AS s_none, \
     count(*) FILTER (WHERE notify_status = 'pending') AS s_pending, \
     count(*) FILTER (WHERE notify_status = 'claimed') AS s_claimed, \
     count(*) FILTER (WHERE notify_status = 'dispatched') AS s_dispatched, \
     count(*) FILTER (WHERE notify_status = 'retry') AS s_retry, \
     count(*) FILTER (WHERE notify_status = 'delivered') AS s_delivered, \
     count(*) FILTER (WHERE notify_status = 'dead_letter') AS s_dead_letter, \
     count(*) FILTER (WHERE dead_letter_reason = 'thread_gone') AS dl_thread_gone, \
     count(*) FILTER (WHERE dead_letter_reason = 'budget') AS dl_budget, \
     count(*) FILTER (WHERE cancel_status = 'dead_letter') AS cancel_dead_letters, \
     count(*) FILTER (WHERE event_version > notified_version) AS undelivered, \
     COALESCE(sum(busy_count), 0)::bigint AS busy_total \
     FROM tasks";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mutants_only_drop_their_own_check() {
        let normal = Sql::new(Checks::under(None));
        let no_token = Sql::new(Checks::under(Some(Mutant::LeaseTokenNotChecked)));
        assert!(normal
            .apply_polls
            .as_str()
            .contains("poll_lease_token <> i.lease_token"));
        assert!(!no_token
            .apply_polls
            .as_str()
            .contains("poll_lease_token <> i.lease_token"));
        let no_expiry = Sql::new(Checks::under(Some(Mutant::LeaseExpiryNotChecked)));
        assert!(!no_expiry.release_notify.as_str().contains("lease_expired"));
        assert!(normal.release_notify.as_str().contains("lease_expired"));
        let after_cancel = Sql::new(Checks::under(Some(Mutant::PollAppliedAfterCancel)));
        assert!(!after_cancel
            .apply_polls
            .as_str()
            .contains("cancel_requested'"));
        assert!(normal.apply_polls.as_str().contains("cancel_requested'"));
        assert_eq!(
            Checks::under(Some(Mutant::FingerprintCheckSkipped)),
            Checks::under(None)
        );
    }
}
