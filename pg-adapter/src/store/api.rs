//! The [`Store`] implementation: every method one transaction, normally one statement (see the
//! module documentation of `store`), each method's contract on it.

use super::bind::{bind_row, lease_arrays, matchable, notify_kind, stored_error, UpdateArrays};
use super::decode::{col, u64_col};
use super::rounds::rounds;
use super::PgStore;
use crate::error::store_error;
use crate::row::{storable, to_i64};
use crate::sql;
use sqlx::Row;
use tasklatch_core::ids::TaskId;
use tasklatch_core::lease::LeaseKind;
use tasklatch_core::policy::{MAX_BATCH, MAX_LIST};
use tasklatch_core::status::{DeadLetterReason, NotifyStatus};
use tasklatch_core::store::*;
use tasklatch_core::task::TaskRow;
use tasklatch_core::time::Timestamp;
use tasklatch_core::transitions::answer::{self, AnswerAction};
use tasklatch_core::transitions::cancel::CancelAction;
use tasklatch_core::transitions::submit;

impl PgStore {
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
