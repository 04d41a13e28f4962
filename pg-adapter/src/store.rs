//! `PgStore`: the production [`Store`] over Postgres (DESIGN "pg-adapter").
//!
//! Every method is one transaction, normally one statement (the texts are the files under
//! `pg-adapter/sql/store/`, see `sql.rs`):
//! claims are `UPDATE … FROM (SELECT … FOR UPDATE SKIP LOCKED)`; guarded writes lock their rows
//! in id order, evaluate the core guard in SQL and apply the transition against the row's
//! current values, reporting each row's [`Refusal`] exactly as `MemStore` does. `now` is always
//! a parameter. Remote text is made storable (NUL → U+FFFD) before it is bound, so no payload can
//! make a write fail.
//!
//! Durability: a call that returned `Ok` has committed (with the server's commit settings); a
//! call that returned [`StoreError::Unavailable`] may or may not have committed — every method
//! is safe to follow by a re-claim, and an unreleased lease simply expires.

use crate::error::store_error;
use crate::row::{decode_task, event_json, storable, storable_opt, to_i64};
use crate::sql::{self, GuardedWrites, GUARDED_WRITES};
use sqlx::postgres::{PgArguments, PgRow};
use sqlx::query::Query;
use sqlx::{PgPool, Postgres, Row};
use std::collections::HashMap;
use std::sync::Arc;
use tasklatch_core::event::Fingerprint;
use tasklatch_core::ids::TaskId;
use tasklatch_core::lease::{LeaseKind, Refusal};
#[cfg(feature = "mutations")]
use tasklatch_core::mutation::Mutant;
use tasklatch_core::policy::{bounded, Policy, MAX_BATCH, MAX_LIST, MAX_STORED_ERROR};
use tasklatch_core::status::{DeadLetterReason, NotifyStatus};
use tasklatch_core::store::*;
use tasklatch_core::task::TaskRow;
use tasklatch_core::time::Timestamp;
use tasklatch_core::transitions::answer::{self, AnswerAction};
use tasklatch_core::transitions::cancel::CancelAction;
use tasklatch_core::transitions::outbox::{NotifyAction, Recorded};
use tasklatch_core::transitions::poll::PollUpdate;
use tasklatch_core::transitions::submit;

type PgQuery = Query<'static, Postgres, PgArguments>;

/// Counted failures beyond this index all have the same retry delay (the backoff exponent caps
/// at 16 for `failures - 1`), so `now + retry_delay(n)` is passed as an array of 18 due times.
const DUE_TABLE: u32 = 17;

struct Inner {
    pool: PgPool,
    policy: Policy,
    writes: GuardedWrites,
    #[cfg(feature = "mutations")]
    mutant: Option<Mutant>,
}

/// The Postgres store. Cheap to clone: clones share the pool and the prepared statement texts.
#[derive(Clone)]
pub struct PgStore {
    inner: Arc<Inner>,
}

impl PgStore {
    /// A store over `pool` (already migrated, see [`crate::migrate`]) whose transitions use
    /// `policy` — the same policy the engines use.
    pub fn new(pool: PgPool, policy: Policy) -> Self {
        PgStore {
            inner: Arc::new(Inner {
                pool,
                policy,
                writes: GUARDED_WRITES,
                #[cfg(feature = "mutations")]
                mutant: None,
            }),
        }
    }

    /// [`PgStore::new`] with the SQL variant of a planted bug switched on, if `mutant` lives in
    /// SQL ([`Mutant::lives_in_sql`]: the lease-token, lease-expiry and cancel-requested
    /// guards); other mutants are ignored. The thread-local `mutation::active` switch does not
    /// reach the database, so the mutant must be passed here.
    #[cfg(feature = "mutations")]
    pub fn with_mutant(pool: PgPool, policy: Policy, mutant: Option<Mutant>) -> Self {
        let mutant = mutant.filter(|m| m.lives_in_sql());
        PgStore {
            inner: Arc::new(Inner {
                pool,
                policy,
                writes: crate::planted::guarded_writes(mutant),
                mutant,
            }),
        }
    }

    /// The connection pool.
    pub fn pool(&self) -> &PgPool {
        &self.inner.pool
    }

    /// The timings the transitions use.
    pub fn policy(&self) -> &Policy {
        &self.inner.policy
    }

    /// The planted bug in force, if any.
    #[cfg(feature = "mutations")]
    pub fn mutant(&self) -> Option<Mutant> {
        self.inner.mutant
    }

    /// Decodes a row the database returned and, in debug builds (the sim, stress and the tests
    /// run them), asserts the row invariants on it ([`tasklatch_core::invariants`]) — unless a
    /// planted bug is in force, which the simulation's checker must catch from outside.
    fn decoded(&self, row: &sqlx::postgres::PgRow) -> Result<TaskRow, StoreError> {
        let task = decode_task(row)?;
        #[cfg(feature = "mutations")]
        let planted = self.inner.mutant.is_some();
        #[cfg(not(feature = "mutations"))]
        let planted = false;
        if !planted {
            tasklatch_core::invariants::debug_check_row(&task);
        }
        Ok(task)
    }

    /// `now + retry_delay(n)` for n = 0..=17, saturating exactly as core does.
    fn due_table(&self, now: Timestamp) -> Vec<i64> {
        (0..=DUE_TABLE)
            .map(|n| now.plus(self.inner.policy.retry_delay(n)).as_micros())
            .collect()
    }

    /// `now + unavailable_delay(n)` for n = 0..=[`DUE_TABLE`] (the backoff of work waiting out
    /// an unavailable peer, indexed by its unanswered calls in a row).
    fn outage_due_table(&self, now: Timestamp) -> Vec<i64> {
        (0..=DUE_TABLE)
            .map(|n| now.plus(self.inner.policy.unavailable_delay(n)).as_micros())
            .collect()
    }

    /// Runs a guarded batch write. Rows of the batch are independent; a task named twice is
    /// handled in order (the second occurrence sees the first one's effect), by running the
    /// k-th occurrences of every task as round k, all in one transaction.
    async fn write_rounds<F>(
        &self,
        n: usize,
        plan: Vec<Vec<usize>>,
        build: F,
    ) -> Result<Vec<WriteOutcome>, StoreError>
    where
        F: Fn(&[usize]) -> PgQuery + Send + Sync,
    {
        let (outcomes, _) = self.write_rounds_claiming(n, plan, build, false).await?;
        Ok(outcomes)
    }

    /// [`PgStore::write_rounds`]; with `hand_off`, also the rows whose outcome says the write
    /// claimed their notification (`handed_off`, the whole row returned), in batch order.
    async fn write_rounds_claiming<F>(
        &self,
        n: usize,
        plan: Vec<Vec<usize>>,
        build: F,
        hand_off: bool,
    ) -> Result<(Vec<WriteOutcome>, Vec<Claimed>), StoreError>
    where
        F: Fn(&[usize]) -> PgQuery + Send + Sync,
    {
        let mut out: Vec<Option<WriteOutcome>> = vec![None; n];
        let mut claimed: Vec<(usize, Claimed)> = Vec::new();
        let mut take = |rows: &[PgRow], round: &[usize]| -> Result<(), StoreError> {
            place(rows, round, &mut out)?;
            if hand_off {
                for (row, &pos) in rows.iter().zip(round) {
                    if col::<Option<bool>>(row, "handed_off")? == Some(true) {
                        claimed.push((pos, self.claimed(row, LeaseKind::Notify)?));
                    }
                }
            }
            Ok(())
        };
        match plan.as_slice() {
            [] => {}
            [only] => {
                let rows = build(only)
                    .fetch_all(&self.inner.pool)
                    .await
                    .map_err(store_error)?;
                take(&rows, only)?;
            }
            rounds => {
                let mut tx = self.inner.pool.begin().await.map_err(store_error)?;
                for round in rounds {
                    let rows = build(round)
                        .fetch_all(&mut *tx)
                        .await
                        .map_err(store_error)?;
                    take(&rows, round)?;
                }
                tx.commit().await.map_err(store_error)?;
            }
        }
        let outcomes = out
            .into_iter()
            .map(|o| o.ok_or_else(|| StoreError::Unavailable("a write got no outcome".into())))
            .collect::<Result<Vec<_>, _>>()?;
        claimed.sort_by_key(|(pos, _)| *pos);
        Ok((outcomes, claimed.into_iter().map(|(_, c)| c).collect()))
    }

    /// Applies poll results with `apply_polls.sql`, handing off the notifications they open
    /// when `hand_off` says to whom.
    async fn polls_applied(
        &self,
        writes: Vec<PollWrite>,
        now: Timestamp,
        hand_off: Option<HandOff>,
    ) -> Result<(Vec<WriteOutcome>, Vec<Claimed>), StoreError> {
        let plan = rounds(writes.iter().map(|w| &w.task_id));
        let sql = self.inner.writes.apply_polls;
        let owner = hand_off.as_ref().map(|h| storable(h.worker.as_str()));
        let expires = hand_off
            .as_ref()
            .map(|h| h.now.plus(h.lease_for).as_micros());
        let claim_now = hand_off.as_ref().map(|h| h.now.as_micros());
        let claiming = hand_off.is_some();
        self.write_rounds_claiming(
            writes.len(),
            plan,
            |round| {
                let (ids, owners, tokens) = lease_arrays(
                    round
                        .iter()
                        .map(|&i| (&writes[i].task_id, &writes[i].lease)),
                );
                let at: Vec<i64> = round
                    .iter()
                    .map(|&i| writes[i].completed_at.as_micros())
                    .collect();
                let mut u = UpdateArrays::default();
                for &i in round {
                    u.push(Some(&writes[i].update));
                }
                let q = sqlx::query(sql)
                    .bind(ids)
                    .bind(owners)
                    .bind(tokens)
                    .bind(at);
                u.bind(q)
                    .bind(now.as_micros())
                    .bind(owner.clone())
                    .bind(expires)
                    .bind(claim_now)
            },
            claiming,
        )
        .await
    }

    /// A row just claimed for loop `kind`, with its lease.
    fn claimed(&self, r: &PgRow, kind: LeaseKind) -> Result<Claimed, StoreError> {
        let row = self.decoded(r)?;
        let lease = row
            .lease(kind)
            .cloned()
            .ok_or_else(|| StoreError::Unavailable("claimed row has no lease".into()))?;
        Ok(Claimed { row, lease })
    }
}

/// The k-th occurrence of each task id goes to round k; rounds keep batch order.
fn rounds<'a>(ids: impl Iterator<Item = &'a TaskId>) -> Vec<Vec<usize>> {
    let mut seen: HashMap<&TaskId, usize> = HashMap::new();
    let mut plan: Vec<Vec<usize>> = Vec::new();
    for (pos, id) in ids.enumerate() {
        let k = seen.entry(id).or_insert(0);
        if plan.len() <= *k {
            plan.push(Vec::new());
        }
        plan[*k].push(pos);
        *k += 1;
    }
    plan
}

fn refusal_of(s: &str) -> Result<Refusal, StoreError> {
    Ok(match s {
        "no_such_task" => Refusal::NoSuchTask,
        "lease_not_held" => Refusal::LeaseNotHeld,
        "lease_expired" => Refusal::LeaseExpired,
        "version_moved" => Refusal::VersionMoved,
        "cancel_requested" => Refusal::CancelRequested,
        "terminal" => Refusal::Terminal,
        _ => return Err(StoreError::Unavailable("unknown refusal".into())),
    })
}

pub(crate) fn col<'r, T>(row: &'r PgRow, name: &str) -> Result<T, StoreError>
where
    T: sqlx::Decode<'r, Postgres> + sqlx::Type<Postgres>,
{
    row.try_get::<T, _>(name).map_err(store_error)
}

pub(crate) fn u64_col(row: &PgRow, name: &str) -> Result<u64, StoreError> {
    let v: i64 = col(row, name)?;
    u64::try_from(v).map_err(|_| StoreError::Unavailable(format!("negative {name}")))
}

/// One outcome row of a guarded write: the refusal, or the outbox after the write.
fn outcome(row: &PgRow) -> Result<WriteOutcome, StoreError> {
    if let Some(r) = col::<Option<String>>(row, "refusal")? {
        return Ok(Err(refusal_of(&r)?));
    }
    if !col::<bool>(row, "written")? {
        // The guard held on the locked row, yet the update did not apply: never report a
        // silent success. (Rows are locked first, so this does not happen.)
        tracing::warn!("guarded write passed its guard but was not applied");
        return Ok(Err(Refusal::LeaseNotHeld));
    }
    let event_version = u64_col(row, "event_version")?;
    let recorded = match col::<Option<String>>(row, "recorded")?.as_deref() {
        None => None,
        Some("new") => Some(Recorded::NewVersion(event_version)),
        Some("unchanged") => Some(Recorded::Unchanged),
        Some("cleared") => Some(Recorded::Cleared),
        Some(_) => return Err(StoreError::Unavailable("unknown recorded kind".into())),
    };
    let status: String = col(row, "notify_status")?;
    Ok(Ok(Written {
        recorded,
        event_version,
        notified_version: u64_col(row, "notified_version")?,
        notify_status: status
            .parse::<NotifyStatus>()
            .map_err(|_| StoreError::Unavailable("unknown notify status".into()))?,
        fingerprint: col::<Option<String>>(row, "fingerprint")?.map(Fingerprint),
    }))
}

/// Puts a round's outcome rows (ordered by ordinality, 1-based) at their batch positions.
fn place(
    rows: &[PgRow],
    round: &[usize],
    out: &mut [Option<WriteOutcome>],
) -> Result<(), StoreError> {
    if rows.len() != round.len() {
        return Err(StoreError::Unavailable(
            "a batch write returned the wrong number of outcomes".into(),
        ));
    }
    for (row, &pos) in rows.iter().zip(round) {
        out[pos] = Some(outcome(row)?);
    }
    Ok(())
}

/// The lease columns of a write batch: ids, owners, tokens.
fn lease_arrays<'a>(
    items: impl Iterator<Item = (&'a TaskId, &'a tasklatch_core::lease::Lease)>,
) -> (Vec<String>, Vec<String>, Vec<i64>) {
    let mut ids = Vec::new();
    let mut owners = Vec::new();
    let mut tokens = Vec::new();
    for (id, lease) in items {
        ids.push(storable(id.as_str()));
        owners.push(storable(lease.owner.as_str()));
        tokens.push(to_i64(lease.token.0));
    }
    (ids, owners, tokens)
}

/// The columns of poll updates (also the `finished` cancel action), one array per column.
#[derive(Default)]
struct UpdateArrays {
    status: Vec<Option<String>>,
    result: Vec<Option<String>>,
    truncated: Vec<Option<bool>>,
    artifact: Vec<Option<String>>,
    error: Vec<Option<String>>,
    input_request: Vec<Option<String>>,
    updated_at: Vec<Option<i64>>,
    observed_at: Vec<Option<i64>>,
    next_at: Vec<Option<i64>>,
    errors: Vec<Option<i64>>,
    err_class: Vec<Option<String>>,
    err_msg: Vec<Option<String>>,
    event: Vec<Option<String>>,
    fingerprint: Vec<Option<String>>,
}

impl UpdateArrays {
    fn push(&mut self, u: Option<&PollUpdate>) {
        let Some(u) = u else {
            self.status.push(None);
            self.result.push(None);
            self.truncated.push(None);
            self.artifact.push(None);
            self.error.push(None);
            self.input_request.push(None);
            self.updated_at.push(None);
            self.observed_at.push(None);
            self.next_at.push(None);
            self.errors.push(None);
            self.err_class.push(None);
            self.err_msg.push(None);
            self.event.push(None);
            self.fingerprint.push(None);
            return;
        };
        let r = &u.remote;
        self.status.push(Some(r.status.as_str().to_owned()));
        self.result.push(storable_opt(r.result.as_deref()));
        self.truncated.push(Some(r.result_truncated));
        self.artifact.push(storable_opt(r.artifact.as_deref()));
        self.error.push(storable_opt(r.error.as_deref()));
        self.input_request
            .push(storable_opt(r.input_request.as_deref()));
        self.updated_at.push(Some(r.updated_at.as_micros()));
        self.observed_at
            .push(r.observed_at.map(Timestamp::as_micros));
        self.next_at.push(u.next_poll_at.map(Timestamp::as_micros));
        self.errors.push(Some(i64::from(u.consecutive_errors)));
        self.err_class
            .push(u.last_error.as_ref().map(|e| e.class.as_str().to_owned()));
        self.err_msg
            .push(u.last_error.as_ref().map(|e| storable(&e.message)));
        match &u.event {
            Some((event, fp)) => {
                self.event.push(Some(event_json(event)));
                self.fingerprint.push(Some(storable(&fp.0)));
            }
            None => {
                self.event.push(None);
                self.fingerprint.push(None);
            }
        }
    }

    fn bind(self, q: PgQuery) -> PgQuery {
        q.bind(self.status)
            .bind(self.result)
            .bind(self.truncated)
            .bind(self.artifact)
            .bind(self.error)
            .bind(self.input_request)
            .bind(self.updated_at)
            .bind(self.observed_at)
            .bind(self.next_at)
            .bind(self.errors)
            .bind(self.err_class)
            .bind(self.err_msg)
            .bind(self.event)
            .bind(self.fingerprint)
    }
}

/// A stored error text: storable, then bounded as the transitions bound it.
fn stored_error(e: &str) -> String {
    bounded(&storable(e), MAX_STORED_ERROR)
}

fn notify_kind(a: &NotifyAction) -> (&'static str, Option<String>, Option<String>) {
    match a {
        NotifyAction::Launched(run) => ("launched", Some(storable(run.as_str())), None),
        NotifyAction::Busy => ("busy", None, None),
        NotifyAction::ThreadGone => ("thread_gone", None, None),
        NotifyAction::LaunchFailed(e) => ("launch_failed", None, Some(stored_error(e))),
        NotifyAction::RunSucceeded => ("run_succeeded", None, None),
        NotifyAction::RunFailed(e) => ("run_failed", None, Some(stored_error(e))),
        NotifyAction::RunOutlived(e) => ("run_outlived", None, Some(stored_error(e))),
        NotifyAction::RunPending => ("run_pending", None, None),
        NotifyAction::LookupUnavailable(e) => ("lookup_unavailable", None, Some(stored_error(e))),
        NotifyAction::LaunchUnavailable(e) => ("launch_unavailable", None, Some(stored_error(e))),
        NotifyAction::BudgetExhausted => ("budget_exhausted", None, None),
    }
}

/// Whether a caller-given text can match a stored id or name at all (stored ones never hold NUL).
fn matchable(s: &str) -> bool {
    !s.contains('\0')
}

/// Whether another row of `started`'s owner on its server tracks its remote task.
async fn tracked_elsewhere(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    started: &TaskRow,
) -> Result<bool, StoreError> {
    let id = &started.identity;
    let found = sqlx::query(sql::HANDLE_TRACKED_ELSEWHERE)
        .bind(storable(id.task_id.as_str()))
        .bind(storable(id.owner.as_str()))
        .bind(storable(id.server.as_str()))
        .bind(storable(id.handle.remote_task_id.expose()))
        .fetch_one(&mut **tx)
        .await
        .map_err(store_error)?;
    found.try_get("tracked").map_err(store_error)
}

fn bind_row(q: PgQuery, row: &TaskRow) -> PgQuery {
    let id = &row.identity;
    let r = &row.remote;
    let p = &row.poll;
    let o = &row.outbox;
    let c = &row.cancel;
    let micros = |t: Option<Timestamp>| t.map(Timestamp::as_micros);
    let lease = |l: &Option<tasklatch_core::lease::Lease>| {
        (
            l.as_ref().map(|l| storable(l.owner.as_str())),
            l.as_ref().map(|l| to_i64(l.token.0)),
            l.as_ref().map(|l| l.expires_at.as_micros()),
        )
    };
    let (plo, plt, ple) = lease(&p.lease);
    let (nlo, nlt, nle) = lease(&o.lease);
    let (clo, clt, cle) = lease(&c.lease);
    q.bind(storable(id.task_id.as_str()))
        .bind(storable(id.owner.as_str()))
        .bind(storable(id.thread.as_str()))
        .bind(storable(id.server.as_str()))
        .bind(storable(&id.name))
        .bind(storable(id.handle.remote_task_id.expose()))
        .bind(storable(id.handle.driver_data.expose()))
        .bind(id.created_at.as_micros())
        .bind(r.status.as_str())
        .bind(storable_opt(r.result.as_deref()))
        .bind(r.result_truncated)
        .bind(storable_opt(r.artifact.as_deref()))
        .bind(storable_opt(r.error.as_deref()))
        .bind(storable_opt(r.input_request.as_deref()))
        .bind(r.updated_at.as_micros())
        .bind(micros(r.observed_at))
        .bind(micros(p.next_poll_at))
        .bind(i64::from(p.consecutive_errors))
        .bind(p.last_error.as_ref().map(|e| e.class.as_str()))
        .bind(p.last_error.as_ref().map(|e| storable(&e.message)))
        .bind(plo)
        .bind(plt)
        .bind(ple)
        .bind(to_i64(p.claims))
        .bind(to_i64(o.event_version))
        .bind(to_i64(o.notified_version))
        .bind(o.fingerprint.as_ref().map(|f| storable(&f.0)))
        .bind(o.event.as_ref().map(event_json))
        .bind(o.status.as_str())
        .bind(o.due_at.as_micros())
        .bind(nlo)
        .bind(nlt)
        .bind(nle)
        .bind(to_i64(o.claims))
        .bind(to_i64(o.dispatch_version))
        .bind(o.dispatch_event.as_ref().map(event_json))
        .bind(i64::from(o.dispatch_attempt))
        .bind(o.run_id.as_ref().map(|r| storable(r.as_str())))
        .bind(i64::from(o.failures))
        .bind(i64::from(o.busy_count))
        .bind(o.last_error.as_deref().map(storable))
        .bind(o.dead_letter.map(|(v, _)| to_i64(v)))
        .bind(o.dead_letter.map(|(_, why)| why.as_str()))
        .bind(micros(c.requested_at))
        .bind(c.status.as_str())
        .bind(micros(c.due_at))
        .bind(clo)
        .bind(clt)
        .bind(cle)
        .bind(to_i64(c.claims))
        .bind(i64::from(c.failures))
        .bind(c.last_error.as_deref().map(storable))
        .bind(micros(o.launched_at))
        .bind(micros(o.settled_at))
        .bind(micros(o.unavailable_since))
        .bind(i64::from(o.outages))
        .bind(micros(c.unavailable_since))
        .bind(i64::from(c.outages))
}

impl Store for PgStore {
    /// One `INSERT` of the whole row (atomic). The row is first checked by
    /// `transitions::submit::validate` ([`StoreError::Invalid`], as `MemStore`), then by the
    /// schema's CHECK constraints; the primary key gives [`StoreError::DuplicateTask`] (checked
    /// first, as `MemStore`), the unique handle index [`StoreError::DuplicateHandle`]. A crash
    /// before the commit leaves no row; the caller compensates (DOMAIN §7).
    async fn insert_task(&self, row: TaskRow) -> Result<(), StoreError> {
        submit::validate(&row)?;
        bind_row(sqlx::query(sql::INSERT_TASK), &row)
            .execute(&self.inner.pool)
            .await
            .map_err(store_error)?;
        Ok(())
    }

    /// One transaction: the row is locked (`lock_intent.sql`); a handle already recorded equal
    /// to the started one answers [`SubmitSettled::Recorded`] again (a retry after an unknown
    /// outcome), a handle another row tracks is [`StoreError::DuplicateHandle`]
    /// (`handle_tracked_elsewhere.sql`, asked before the row's own state), a row that no
    /// longer waits answers [`SubmitSettled::NotAwaiting`]; otherwise
    /// `submit::record_handle` is applied in Rust to the locked row and the row written back
    /// (`record_handle.sql`, guarded again). The partial unique index on recorded handles gives
    /// [`StoreError::DuplicateHandle`]. A withdrawal is one `DELETE` (`withdraw_submit.sql`).
    async fn settle_submit(
        &self,
        task: &TaskId,
        settlement: SubmitSettlement,
        now: Timestamp,
    ) -> Result<SubmitSettled, StoreError> {
        let SubmitSettlement::Started(started) = settlement else {
            let deleted = sqlx::query(sql::WITHDRAW_SUBMIT)
                .bind(task.as_str())
                .execute(&self.inner.pool)
                .await
                .map_err(store_error)?;
            return Ok(match deleted.rows_affected() {
                0 => SubmitSettled::NotAwaiting,
                _ => SubmitSettled::Withdrawn,
            });
        };
        submit::validate(&started)?;
        let mut tx = self.inner.pool.begin().await.map_err(store_error)?;
        let locked = sqlx::query(sql::LOCK_INTENT)
            .bind(task.as_str())
            .fetch_optional(&mut *tx)
            .await
            .map_err(store_error)?;
        let mut row = match locked {
            Some(locked) => Some(self.decoded(&locked)?),
            None => None,
        };
        let recorded_here = row
            .as_ref()
            .is_some_and(|row| row.identity.handle == started.identity.handle);
        if recorded_here {
            return Ok(SubmitSettled::Recorded);
        }
        if tracked_elsewhere(&mut tx, &started).await? {
            return Err(StoreError::DuplicateHandle);
        }
        let Some(mut row) = row.take() else {
            return Ok(SubmitSettled::NotAwaiting);
        };
        if !submit::record_handle(&mut row, &started, now) {
            return Ok(SubmitSettled::NotAwaiting);
        }
        let written = bind_row(sqlx::query(sql::RECORD_HANDLE), &row)
            .execute(&mut *tx)
            .await
            .map_err(store_error)?;
        if written.rows_affected() != 1 {
            return Err(StoreError::Unavailable(
                "a locked intent row changed under its lock".into(),
            ));
        }
        tx.commit().await.map_err(store_error)?;
        Ok(SubmitSettled::Recorded)
    }

    /// One statement: the due rows of loop `kind` (ordered by due time then id, at most
    /// `req.limit` — a limit above [`MAX_BATCH`] is [`StoreError::Invalid`] — rows locked by a
    /// concurrent transaction skipped) get a fresh lease — owner `req.worker`,
    /// token = the row's claim counter + 1, expiry `req.now + req.lease_for` — and, for
    /// notifications, the frozen snapshot (`transitions::outbox::claim`, in SQL). Returned in
    /// (due, id) order. A crash after the commit leaves leases that simply expire.
    async fn claim(&self, kind: LeaseKind, req: ClaimRequest) -> Result<Vec<Claimed>, StoreError> {
        let sql = match kind {
            LeaseKind::Poll => sql::CLAIM_POLL,
            LeaseKind::Notify => sql::CLAIM_NOTIFY,
            LeaseKind::Cancel => sql::CLAIM_CANCEL,
        };
        let limit = match i64::try_from(req.limit) {
            Ok(limit) if req.limit <= MAX_BATCH => limit,
            _ => {
                return Err(StoreError::Invalid(format!(
                    "claim limit {} is above the batch limit {MAX_BATCH}",
                    req.limit
                )))
            }
        };
        let rows = sqlx::query(sql)
            .bind(req.now.as_micros())
            .bind(limit)
            .bind(storable(req.worker.as_str()))
            .bind(req.now.plus(req.lease_for).as_micros())
            .fetch_all(&self.inner.pool)
            .await
            .map_err(store_error)?;
        rows.iter().map(|r| self.claimed(r, kind)).collect()
    }

    /// One statement per batch: each row is locked, checked by `guard::poll_apply` in SQL
    /// (own poll lease, unexpired at `completed_at`, no cancel requested, not terminal — refusals
    /// in that order), and on success gets the update's remote state and schedule, loses the poll
    /// lease and records the event against its current outbox (`record_event` in SQL: the
    /// notification columns written concurrently by the notify loop are kept). Atomic for the
    /// batch; outcomes in batch order.
    async fn apply_polls(
        &self,
        writes: Vec<PollWrite>,
        now: Timestamp,
    ) -> Result<Vec<WriteOutcome>, StoreError> {
        let (outcomes, _) = self.polls_applied(writes, now, None).await?;
        Ok(outcomes)
    }

    /// `apply_polls.sql` with its hand-off: the same statement, with the hand-off's lease
    /// owner, expiry and time bound (see the SQL). One row version per written row.
    async fn apply_polls_and_claim(
        &self,
        writes: Vec<PollWrite>,
        now: Timestamp,
        hand_off: HandOff,
    ) -> Result<(Vec<WriteOutcome>, Vec<Claimed>), StoreError> {
        self.polls_applied(writes, now, Some(hand_off)).await
    }

    /// One statement per batch: each row is locked and checked by `guard::notify_write` in SQL
    /// (own notification lease unexpired at `now`, same dispatch version), then
    /// `outbox::apply_action` is applied in SQL and the lease released. Atomic for the batch;
    /// outcomes in batch order.
    async fn finish_notifications(
        &self,
        writes: Vec<NotifyWrite>,
        now: Timestamp,
    ) -> Result<Vec<WriteOutcome>, StoreError> {
        let plan = rounds(writes.iter().map(|w| &w.task_id));
        let sql = self.inner.writes.finish_notifications;
        let check_due = now.plus(self.inner.policy.run_check_interval).as_micros();
        let due = self.due_table(now);
        let outage_due = self.outage_due_table(now);
        let outage_cutoff = now.minus(self.inner.policy.max_unavailable).as_micros();
        self.write_rounds(writes.len(), plan, |round| {
            let (ids, owners, tokens) = lease_arrays(
                round
                    .iter()
                    .map(|&i| (&writes[i].task_id, &writes[i].lease)),
            );
            let mut versions = Vec::with_capacity(round.len());
            let mut kinds = Vec::with_capacity(round.len());
            let mut runs = Vec::with_capacity(round.len());
            let mut errors = Vec::with_capacity(round.len());
            for &i in round {
                let (kind, run, error) = notify_kind(&writes[i].action);
                versions.push(to_i64(writes[i].dispatch_version));
                kinds.push(kind);
                runs.push(run);
                errors.push(error);
            }
            sqlx::query(sql)
                .bind(ids)
                .bind(owners)
                .bind(tokens)
                .bind(versions)
                .bind(kinds)
                .bind(runs)
                .bind(errors)
                .bind(now.as_micros())
                .bind(check_due)
                .bind(due.clone())
                .bind(outage_due.clone())
                .bind(outage_cutoff)
        })
        .await
    }

    /// One statement per batch: each row is locked and checked by `guard::cancel_write` in SQL
    /// (own cancel lease unexpired at `now`), then `cancel::apply` is applied in SQL (a terminal
    /// snapshot is applied and its event recorded only if the task is not terminal yet) and the
    /// cancel lease released. Atomic for the batch; outcomes in batch order.
    async fn finish_cancels(
        &self,
        writes: Vec<CancelWrite>,
        now: Timestamp,
    ) -> Result<Vec<WriteOutcome>, StoreError> {
        let plan = rounds(writes.iter().map(|w| &w.task_id));
        let sql = self.inner.writes.finish_cancels;
        let due = self.due_table(now);
        let outage_due = self.outage_due_table(now);
        let outage_cutoff = now.minus(self.inner.policy.max_unavailable).as_micros();
        self.write_rounds(writes.len(), plan, |round| {
            let (ids, owners, tokens) = lease_arrays(
                round
                    .iter()
                    .map(|&i| (&writes[i].task_id, &writes[i].lease)),
            );
            let mut kinds = Vec::with_capacity(round.len());
            let mut errors = Vec::with_capacity(round.len());
            let mut u = UpdateArrays::default();
            for &i in round {
                match &writes[i].action {
                    CancelAction::Finished(update) => {
                        kinds.push("finished");
                        errors.push(None);
                        u.push(Some(update));
                    }
                    CancelAction::Acknowledged(update) => {
                        kinds.push("acknowledged");
                        errors.push(None);
                        u.push(Some(update));
                    }
                    CancelAction::Failed(e) => {
                        kinds.push("failed");
                        errors.push(Some(stored_error(e)));
                        u.push(None);
                    }
                    CancelAction::Unavailable(e) => {
                        kinds.push("unavailable");
                        errors.push(Some(stored_error(e)));
                        u.push(None);
                    }
                    CancelAction::BudgetExhausted => {
                        kinds.push("budget");
                        errors.push(None);
                        u.push(None);
                    }
                }
            }
            let q = sqlx::query(sql)
                .bind(ids)
                .bind(owners)
                .bind(tokens)
                .bind(kinds);
            u.bind(q)
                .bind(errors)
                .bind(now.as_micros())
                .bind(due.clone())
                .bind(outage_due.clone())
                .bind(outage_cutoff)
        })
        .await
    }

    /// One statement per batch: each row is locked and checked by `guard::release` in SQL (own
    /// lease of `kind` unexpired at `now`); the lease is cleared and the row is due at
    /// `retry_at`; an error counts a failure for the notify and cancel loops (never for polls).
    /// The phase is unchanged. Atomic for the batch; outcomes in batch order.
    async fn release(
        &self,
        kind: LeaseKind,
        releases: Vec<Release>,
        now: Timestamp,
    ) -> Result<Vec<WriteOutcome>, StoreError> {
        let plan = rounds(releases.iter().map(|r| &r.task_id));
        let sql = match kind {
            LeaseKind::Poll => self.inner.writes.release_poll,
            LeaseKind::Notify => self.inner.writes.release_notify,
            LeaseKind::Cancel => self.inner.writes.release_cancel,
        };
        self.write_rounds(releases.len(), plan, |round| {
            let (ids, owners, tokens) = lease_arrays(
                round
                    .iter()
                    .map(|&i| (&releases[i].task_id, &releases[i].lease)),
            );
            let retry: Vec<i64> = round
                .iter()
                .map(|&i| releases[i].retry_at.as_micros())
                .collect();
            let errors: Vec<Option<String>> = round
                .iter()
                .map(|&i| releases[i].error.as_deref().map(stored_error))
                .collect();
            sqlx::query(sql)
                .bind(ids)
                .bind(owners)
                .bind(tokens)
                .bind(retry)
                .bind(errors)
                .bind(now.as_micros())
        })
        .await
    }

    /// One statement: the matching rows in scope are locked; a single, non-terminal match
    /// without a previous request gets `cancel_requested_at = now` and cancel work due now, as
    /// `transitions::cancel::request` (from then on the poll guard refuses every poll result).
    /// Repeats change nothing. Other owners' or threads' tasks are [`CancelOutcome::NotFound`].
    async fn request_cancel(
        &self,
        scope: &Scope,
        target: &CancelTarget,
        now: Timestamp,
    ) -> Result<CancelOutcome, StoreError> {
        let (by_name, id, name) = match target {
            CancelTarget::Id(id) => (false, id.as_str(), ""),
            CancelTarget::Name(name) => (true, "", name.as_str()),
        };
        if ![scope.owner.as_str(), scope.thread.as_str(), id, name]
            .iter()
            .all(|s| matchable(s))
        {
            return Ok(CancelOutcome::NotFound);
        }
        let rows = sqlx::query(sql::REQUEST_CANCEL)
            .bind(scope.owner.as_str())
            .bind(scope.thread.as_str())
            .bind(by_name)
            .bind(id)
            .bind(name)
            .bind(now.as_micros())
            .fetch_all(&self.inner.pool)
            .await
            .map_err(store_error)?;
        let Some(first) = rows.first() else {
            return Err(StoreError::Unavailable(
                "cancel request got no answer".into(),
            ));
        };
        let matches: i64 = col(first, "matches")?;
        if matches == 0 {
            return Ok(CancelOutcome::NotFound);
        }
        if matches > 1 {
            return Ok(CancelOutcome::Ambiguous(
                usize::try_from(matches).unwrap_or(usize::MAX),
            ));
        }
        let task = TaskId(col(first, "id")?);
        let status: String = col(first, "remote_status")?;
        let terminal = status
            .parse::<tasklatch_core::status::RemoteStatus>()
            .map_err(|_| StoreError::Unavailable("unknown remote status".into()))?
            .is_terminal();
        if terminal {
            return Ok(CancelOutcome::AlreadyFinished(task));
        }
        if col::<bool>(first, "requested")? {
            return Ok(CancelOutcome::AlreadyRequested(task));
        }
        if col::<bool>(first, "updated")? {
            return Ok(CancelOutcome::Requested(task));
        }
        Err(StoreError::Unavailable(
            "cancel request was not applied".into(),
        ))
    }

    /// One statement (`record_answer.sql`): the task in scope is locked and
    /// `transitions::answer::record` is applied in SQL, after `transitions::answer::validate`
    /// ([`StoreError::Invalid`], as `MemStore`). Other owners' or threads' tasks are
    /// [`AnswerOutcome::NotFound`]. The answer is bound as a parameter, never formatted.
    async fn record_answer(
        &self,
        scope: &Scope,
        req: AnswerRequest,
        now: Timestamp,
    ) -> Result<AnswerOutcome, StoreError> {
        answer::validate(&req.request_id, req.text.expose())?;
        let ids = [
            scope.owner.as_str(),
            scope.thread.as_str(),
            req.task_id.as_str(),
        ];
        if !ids.iter().all(|s| matchable(s)) {
            return Ok(AnswerOutcome::NotFound);
        }
        let found = sqlx::query(sql::RECORD_ANSWER)
            .bind(scope.owner.as_str())
            .bind(scope.thread.as_str())
            .bind(req.task_id.as_str())
            .bind(req.request_id.as_str())
            .bind(req.text.expose())
            .bind(now.as_micros())
            .fetch_optional(&self.inner.pool)
            .await
            .map_err(store_error)?;
        let Some(found) = found else {
            return Ok(AnswerOutcome::NotFound);
        };
        let outcome: String = col(&found, "outcome")?;
        let id = req.task_id;
        Ok(match outcome.as_str() {
            "recorded" if col::<bool>(&found, "updated")? => AnswerOutcome::Recorded(id),
            "already_answered" => AnswerOutcome::AlreadyAnswered(id),
            "another_pending" => AnswerOutcome::AnotherPending(id),
            "not_asked" => AnswerOutcome::NotAsked(id),
            _ => return Err(StoreError::Unavailable("answer was not recorded".into())),
        })
    }

    /// One statement per batch (`finish_answers.sql`): each row is locked and checked by
    /// `guard::answer_write` in SQL (own poll lease unexpired at `now`, the answer marked as
    /// that claim's attempt), then `transitions::answer::apply` is applied in SQL. The poll
    /// lease stays held. Atomic for the batch; outcomes in batch order.
    async fn finish_answers(
        &self,
        writes: Vec<AnswerWrite>,
        now: Timestamp,
    ) -> Result<Vec<WriteOutcome>, StoreError> {
        let plan = rounds(writes.iter().map(|w| &w.task_id));
        let sql = self.inner.writes.finish_answers;
        self.write_rounds(writes.len(), plan, |round| {
            let (ids, owners, tokens) = lease_arrays(
                round
                    .iter()
                    .map(|&i| (&writes[i].task_id, &writes[i].lease)),
            );
            let (kinds, errors): (Vec<&str>, Vec<Option<String>>) = round
                .iter()
                .map(|&i| match &writes[i].action {
                    AnswerAction::Sent => ("sent", None),
                    AnswerAction::Unconfirmed(e) => ("unconfirmed", Some(stored_error(e))),
                    AnswerAction::Failed(e) => ("failed", Some(stored_error(e))),
                    AnswerAction::NotSent => ("not_sent", None),
                })
                .unzip();
            sqlx::query(sql)
                .bind(ids)
                .bind(owners)
                .bind(tokens)
                .bind(kinds)
                .bind(errors)
                .bind(now.as_micros())
        })
        .await
    }

    /// One read of at most `limit` rows: the caller's tasks in this thread in `order`, each
    /// order served by its index (`tasks_scope`, `tasks_recent`) and stopped at the limit.
    async fn list_tasks(
        &self,
        scope: &Scope,
        order: ListOrder,
        limit: usize,
    ) -> Result<Vec<TaskRow>, StoreError> {
        if limit > MAX_LIST {
            return Err(StoreError::Invalid(format!(
                "a listing returns at most {MAX_LIST} tasks"
            )));
        }
        if !matchable(scope.owner.as_str()) || !matchable(scope.thread.as_str()) {
            return Ok(Vec::new());
        }
        let statement = match order {
            ListOrder::Newest => sql::LIST_TASKS,
            ListOrder::RecentlyUpdated => sql::LIST_RECENT_TASKS,
        };
        let rows = sqlx::query(statement)
            .bind(scope.owner.as_str())
            .bind(scope.thread.as_str())
            .bind(i64::try_from(limit).unwrap_or(i64::MAX))
            .fetch_all(&self.inner.pool)
            .await
            .map_err(store_error)?;
        rows.iter().map(|r| self.decoded(r)).collect()
    }

    /// One read: the task if it is the caller's and in this thread, else `None`.
    async fn get_task(&self, scope: &Scope, id: &TaskId) -> Result<Option<TaskRow>, StoreError> {
        if ![scope.owner.as_str(), scope.thread.as_str(), id.as_str()]
            .iter()
            .all(|s| matchable(s))
        {
            return Ok(None);
        }
        let row = sqlx::query(sql::GET_TASK)
            .bind(scope.owner.as_str())
            .bind(scope.thread.as_str())
            .bind(id.as_str())
            .fetch_optional(&self.inner.pool)
            .await
            .map_err(store_error)?;
        row.as_ref().map(|r| self.decoded(r)).transpose()
    }

    /// One read: rows with id greater than `after` in id (byte) order, at most `limit`.
    async fn admin_rows(
        &self,
        after: Option<TaskId>,
        limit: usize,
    ) -> Result<Vec<TaskRow>, StoreError> {
        // Stored ids never hold NUL, so `id > "x\0…"` is `id > "x"`: cut at the first NUL.
        let after = after
            .map(|a| a.0.split('\0').next().unwrap_or_default().to_owned())
            .unwrap_or_default();
        let rows = sqlx::query(sql::ADMIN_ROWS)
            .bind(after)
            .bind(i64::try_from(limit).unwrap_or(i64::MAX))
            .fetch_all(&self.inner.pool)
            .await
            .map_err(store_error)?;
        rows.iter().map(|r| self.decoded(r)).collect()
    }

    /// One statement (`sql/store/prune_finished.sql`): deletes up to `req.limit` settled,
    /// finished rows and their ended runs.
    async fn prune_finished(&self, req: PruneRequest) -> Result<Pruned, StoreError> {
        if req.limit > MAX_BATCH {
            return Err(StoreError::Invalid(format!(
                "a prune deletes at most {MAX_BATCH} tasks"
            )));
        }
        let row = sqlx::query(sql::PRUNE_FINISHED)
            .bind(req.now.as_micros())
            .bind(req.finished_before.as_micros())
            .bind(i64::try_from(req.limit).unwrap_or(i64::MAX))
            .bind(req.dead_letters_before.as_micros())
            .fetch_one(&self.inner.pool)
            .await
            .map_err(store_error)?;
        Ok(Pruned {
            tasks: u64_col(&row, "tasks")?,
            runs: u64_col(&row, "runs")?,
        })
    }

    /// One read (a scan of the table): counts for operators.
    async fn overview(&self) -> Result<Overview, StoreError> {
        let row = sqlx::query(sql::OVERVIEW)
            .fetch_one(&self.inner.pool)
            .await
            .map_err(store_error)?;
        let n = |name: &str| u64_col(&row, name);
        let by_status = |s: NotifyStatus| -> Result<(NotifyStatus, u64), StoreError> {
            Ok((s, n(&format!("s_{}", s.as_str()))?))
        };
        Ok(Overview {
            tasks: n("tasks")?,
            by_notify_status: NotifyStatus::ALL
                .iter()
                .map(|s| by_status(*s))
                .collect::<Result<_, _>>()?,
            dead_letters: DeadLetterReason::ALL
                .iter()
                .map(|d| Ok((*d, n(&format!("dl_{}", d.as_str()))?)))
                .collect::<Result<_, StoreError>>()?,
            cancel_dead_letters: n("cancel_dead_letters")?,
            undelivered: n("undelivered")?,
            busy_total: n("busy_total")?,
        })
    }

    /// One statement: the row is locked, changed only when dead-lettered with an event.
    async fn requeue_dead_letter(
        &self,
        id: &TaskId,
        now: Timestamp,
    ) -> Result<RequeueOutcome, StoreError> {
        if !matchable(id.as_str()) {
            return Ok(RequeueOutcome::NotFound);
        }
        let Some(row) = sqlx::query(sql::REQUEUE_DEAD_LETTER)
            .bind(id.as_str())
            .bind(now.as_micros())
            .fetch_optional(&self.inner.pool)
            .await
            .map_err(store_error)?
        else {
            return Ok(RequeueOutcome::NotFound);
        };
        if let Some(version) = col::<Option<i64>>(&row, "event_version")? {
            let version = u64::try_from(version)
                .map_err(|_| StoreError::Unavailable("negative event version".into()))?;
            return Ok(RequeueOutcome::Requeued(version));
        }
        let status: String = col(&row, "notify_status")?;
        let has_event: bool = col(&row, "has_event")?;
        Ok(
            if status == NotifyStatus::DeadLetter.as_str() && !has_event {
                RequeueOutcome::NothingToDeliver
            } else {
                RequeueOutcome::NotDeadLettered
            },
        )
    }

    /// One statement: the chosen rows are locked (skipping rows a concurrent call holds) and
    /// only their next poll moves, earlier.
    async fn poll_sooner(&self, req: PollSooner) -> Result<PolledSooner, StoreError> {
        if req.limit > MAX_BATCH {
            return Err(StoreError::Invalid(format!(
                "polls are brought forward at most {MAX_BATCH} at a time"
            )));
        }
        let spacing = i64::try_from(req.spacing.as_micros()).unwrap_or(i64::MAX);
        let row = sqlx::query(sql::POLL_SOONER)
            .bind(req.server.as_ref().map(|s| s.as_str().to_owned()))
            .bind(req.backed_off_only)
            .bind(req.now.as_micros())
            .bind(req.from.as_micros())
            .bind(spacing)
            .bind(i64::try_from(req.limit).unwrap_or(i64::MAX))
            .fetch_one(&self.inner.pool)
            .await
            .map_err(store_error)?;
        let count = |name: &str| -> Result<u64, StoreError> {
            let n: i64 = col(&row, name)?;
            u64::try_from(n).map_err(|_| StoreError::Unavailable(format!("negative {name}")))
        };
        Ok(PolledSooner {
            selected: count("selected")?,
            moved: count("moved")?,
        })
    }

    /// One statement: the row is locked, changed only when its cancel work is dead-lettered and
    /// the task is not terminal.
    async fn requeue_cancel_dead_letter(
        &self,
        id: &TaskId,
        now: Timestamp,
    ) -> Result<CancelRequeueOutcome, StoreError> {
        if !matchable(id.as_str()) {
            return Ok(CancelRequeueOutcome::NotFound);
        }
        let Some(row) = sqlx::query(sql::REQUEUE_CANCEL_DEAD_LETTER)
            .bind(id.as_str())
            .bind(now.as_micros())
            .fetch_optional(&self.inner.pool)
            .await
            .map_err(store_error)?
        else {
            return Ok(CancelRequeueOutcome::NotFound);
        };
        let dead: bool = col(&row, "dead_lettered")?;
        let terminal: bool = col(&row, "terminal")?;
        Ok(match (dead, terminal) {
            (false, _) => CancelRequeueOutcome::NotDeadLettered,
            (true, true) => CancelRequeueOutcome::AlreadyFinished,
            (true, false) => CancelRequeueOutcome::Requeued,
        })
    }

    /// One read of the database's `clock_timestamp()` (no table touched): the clock every
    /// worker sharing this database is measured against — given as of the midpoint of this
    /// call. The connection is acquired first; only then is the query sent, and the reading is
    /// moved back by half of the wait that came before it (measured on the monotonic clock).
    /// So a caller that reads its own clock just before and just after this call and compares
    /// the reading with the midpoint of the two (the skew guard, core `engine::measure`) is
    /// off by at most half the query's round trip, however long the pool made it wait: after
    /// a database restart seconds of waiting for a connection were read as clock skew, and
    /// claims were refused.
    async fn store_time(&self) -> Result<Option<Timestamp>, StoreError> {
        let called = std::time::Instant::now();
        let mut conn = self.inner.pool.acquire().await.map_err(store_error)?;
        let waited = called.elapsed();
        let row = sqlx::query(sql::STORE_TIME)
            .fetch_one(&mut *conn)
            .await
            .map_err(store_error)?;
        let read = Timestamp::from_micros(col(&row, "now_us")?);
        Ok(Some(read.minus(waited / 2)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_split_repeated_ids_in_order() {
        let ids: Vec<TaskId> = ["a", "b", "a", "c", "a", "b"]
            .iter()
            .map(|s| TaskId::from(*s))
            .collect();
        assert_eq!(rounds(ids.iter()), vec![vec![0, 1, 3], vec![2, 5], vec![4]]);
        assert!(rounds(std::iter::empty()).is_empty());
    }
}
