//! `MemStore`: the executable specification of [`Store`].
//!
//! Rows live in a `BTreeMap` behind one mutex; every method takes the lock once, so each call
//! is atomic and calls are linearizable. Every change goes through the pure transitions, and
//! every ordering is explicit (`(due, id)` for claims), so the model is deterministic.

use crate::ids::TaskId;
use crate::invariants::debug_check_row;
use crate::lease::{Lease, LeaseKind, LeaseToken, Refusal};
use crate::mutation::{self, planted, Mutant};
use crate::policy::{Policy, MAX_BATCH, MAX_LIST};
use crate::status::{CancelStatus, NotifyStatus};
use crate::store::*;
use crate::task::TaskRow;
use crate::time::Timestamp;
use crate::transitions::outbox::{Recorded, Requeued};
use crate::transitions::{answer, cancel, guard, outbox, poll, poll_sooner, retention, submit};
use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

/// The in-memory store.
pub struct MemStore {
    policy: Policy,
    rows: Mutex<BTreeMap<TaskId, TaskRow>>,
}

impl MemStore {
    /// An empty store whose transitions use `policy`.
    pub fn new(policy: Policy) -> Self {
        MemStore {
            policy,
            rows: Mutex::new(BTreeMap::new()),
        }
    }

    fn rows(&self) -> MutexGuard<'_, BTreeMap<TaskId, TaskRow>> {
        self.rows.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Applies poll results; with `hand_off`, also claims the notification of each row whose
    /// new version opened the channel (see [`Store::apply_polls_and_claim`]).
    fn polls_applied(
        &self,
        writes: Vec<PollWrite>,
        now: Timestamp,
        hand_off: Option<&ClaimRequest>,
    ) -> (Vec<WriteOutcome>, Vec<Claimed>) {
        let mut claimed = Vec::new();
        let outcomes = self.write_each(
            writes,
            |w| &w.task_id,
            |row, w| {
                guard::poll_apply(row, &w.lease, w.completed_at)?;
                let recorded = poll::apply(row, w.update, now);
                let opened = matches!(recorded, Recorded::NewVersion(_))
                    && row.outbox.status == NotifyStatus::Pending;
                if let Some(claim) =
                    hand_off.filter(|c| opened && claimable(LeaseKind::Notify, row, c.now))
                {
                    let lease = take_lease(LeaseKind::Notify, row, claim);
                    claimed.push(Claimed {
                        row: row.clone(),
                        lease,
                    });
                }
                Ok(Written::of(row, Some(recorded)))
            },
        );
        (outcomes, claimed)
    }

    fn write_each<W>(
        &self,
        writes: Vec<W>,
        id: impl Fn(&W) -> &TaskId,
        mut apply: impl FnMut(&mut TaskRow, W) -> WriteOutcome,
    ) -> Vec<WriteOutcome> {
        let mut rows = self.rows();
        writes
            .into_iter()
            .map(|w| match rows.get_mut(id(&w)) {
                None => Err(Refusal::NoSuchTask),
                Some(row) => {
                    let outcome = apply(row, w);
                    debug_check_row(row);
                    outcome
                }
            })
            .collect()
    }
}

/// Whether another row of `row`'s owner on its server already tracks its remote handle (an
/// unrecorded handle is nobody's).
fn tracked_elsewhere(rows: &BTreeMap<TaskId, TaskRow>, row: &TaskRow) -> bool {
    let id = &row.identity;
    !id.handle.is_unrecorded()
        && rows.values().any(|r| {
            r.id() != row.id()
                && r.identity.owner == id.owner
                && r.identity.server == id.server
                && r.identity.handle.remote_task_id == id.handle.remote_task_id
        })
}

fn due_at(kind: LeaseKind, row: &TaskRow) -> Option<Timestamp> {
    match kind {
        LeaseKind::Poll => row.poll.next_poll_at,
        LeaseKind::Notify => Some(row.outbox.due_at),
        LeaseKind::Cancel => row.cancel.due_at,
    }
}

/// Whether loop `kind` may claim `row` at `now` (DOMAIN §3, §4, §6). Polling stands still only
/// while cancel work is in progress: a task whose cancel was acknowledged or dead-lettered is
/// polled again until it is terminal.
pub fn claimable(kind: LeaseKind, row: &TaskRow, now: Timestamp) -> bool {
    match kind {
        LeaseKind::Poll => {
            let standing_still = cancel::in_progress(row);
            let standing_still =
                mutation::substitute(Mutant::PollClaimSkipsCancelRequested, standing_still, |s| {
                    planted::cancel_ever_requested(s, row)
                });
            row.remote.status.is_pollable()
                && !standing_still
                && row.poll.next_poll_at.is_some_and(|t| t <= now)
                && Lease::is_free(row.poll.lease.as_ref(), now)
        }
        LeaseKind::Notify => outbox::claimable(&row.outbox, now),
        LeaseKind::Cancel => cancel::claimable(row, now),
    }
}

/// Takes the lease of loop `kind` on `row` (the row's claim counter gives the token).
pub fn take_lease(kind: LeaseKind, row: &mut TaskRow, req: &ClaimRequest) -> Lease {
    let lease = lease_row(kind, row, req);
    debug_check_row(row);
    lease
}

fn lease_row(kind: LeaseKind, row: &mut TaskRow, req: &ClaimRequest) -> Lease {
    let claims = match kind {
        LeaseKind::Poll => &mut row.poll.claims,
        LeaseKind::Notify => &mut row.outbox.claims,
        LeaseKind::Cancel => &mut row.cancel.claims,
    };
    *claims += 1;
    let lease = Lease {
        owner: req.worker.clone(),
        token: LeaseToken(*claims),
        expires_at: req.now.plus(req.lease_for),
    };
    match kind {
        LeaseKind::Poll => {
            row.poll.lease = Some(lease.clone());
            answer::on_poll_claim(row, lease.token);
        }
        LeaseKind::Notify => outbox::claim(&mut row.outbox, lease.clone()),
        LeaseKind::Cancel => row.cancel.lease = Some(lease.clone()),
    }
    lease
}

impl Store for MemStore {
    async fn insert_task(&self, row: TaskRow) -> Result<(), StoreError> {
        submit::validate(&row)?;
        let mut rows = self.rows();
        if rows.contains_key(row.id()) {
            return Err(StoreError::DuplicateTask);
        }
        if tracked_elsewhere(&rows, &row) {
            return Err(StoreError::DuplicateHandle);
        }
        debug_check_row(&row);
        rows.insert(row.id().clone(), row);
        Ok(())
    }

    async fn settle_submit(
        &self,
        task: &TaskId,
        settlement: SubmitSettlement,
        now: Timestamp,
    ) -> Result<SubmitSettled, StoreError> {
        let mut rows = self.rows();
        if let SubmitSettlement::Started(started) = &settlement {
            let recorded_here = rows
                .get(task)
                .is_some_and(|row| row.identity.handle == started.identity.handle);
            if !recorded_here && tracked_elsewhere(&rows, started) {
                return Err(StoreError::DuplicateHandle);
            }
        }
        let Some(row) = rows.get(task) else {
            return Ok(SubmitSettled::NotAwaiting);
        };
        let SubmitSettlement::Started(started) = settlement else {
            if !submit::awaits_handle(row) {
                return Ok(SubmitSettled::NotAwaiting);
            }
            rows.remove(task);
            return Ok(SubmitSettled::Withdrawn);
        };
        if row.identity.handle == started.identity.handle {
            return Ok(SubmitSettled::Recorded);
        }
        if !submit::awaits_handle(row) {
            return Ok(SubmitSettled::NotAwaiting);
        }
        submit::validate(&started)?;
        let Some(row) = rows.get_mut(task) else {
            return Ok(SubmitSettled::NotAwaiting);
        };
        submit::record_handle(row, &started, now);
        debug_check_row(row);
        Ok(SubmitSettled::Recorded)
    }

    async fn claim(&self, kind: LeaseKind, req: ClaimRequest) -> Result<Vec<Claimed>, StoreError> {
        if req.limit > MAX_BATCH {
            return Err(StoreError::Invalid(format!(
                "claim limit {} above {MAX_BATCH}",
                req.limit
            )));
        }
        let mut rows = self.rows();
        let mut due: Vec<(Timestamp, TaskId)> = rows
            .values()
            .filter(|r| claimable(kind, r, req.now))
            .filter_map(|r| due_at(kind, r).map(|t| (t, r.id().clone())))
            .collect();
        due.sort();
        due.truncate(req.limit);
        let mut claimed = Vec::with_capacity(due.len());
        for (_, id) in due {
            if let Some(row) = rows.get_mut(&id) {
                let lease = take_lease(kind, row, &req);
                claimed.push(Claimed {
                    row: row.clone(),
                    lease,
                });
            }
        }
        Ok(claimed)
    }

    async fn apply_polls(
        &self,
        writes: Vec<PollWrite>,
        now: Timestamp,
    ) -> Result<Vec<WriteOutcome>, StoreError> {
        Ok(self.polls_applied(writes, now, None).0)
    }

    async fn apply_polls_and_claim(
        &self,
        writes: Vec<PollWrite>,
        now: Timestamp,
        hand_off: HandOff,
    ) -> Result<(Vec<WriteOutcome>, Vec<Claimed>), StoreError> {
        Ok(self.polls_applied(writes, now, Some(&hand_off.as_claim())))
    }

    async fn finish_notifications(
        &self,
        writes: Vec<NotifyWrite>,
        now: Timestamp,
    ) -> Result<Vec<WriteOutcome>, StoreError> {
        Ok(self.write_each(
            writes,
            |w| &w.task_id,
            |row, w| {
                guard::notify_write(row, &w.lease, w.dispatch_version, now)?;
                outbox::apply_action(&mut row.outbox, w.action, now, &self.policy);
                Ok(Written::of(row, None))
            },
        ))
    }

    async fn finish_cancels(
        &self,
        writes: Vec<CancelWrite>,
        now: Timestamp,
    ) -> Result<Vec<WriteOutcome>, StoreError> {
        Ok(self.write_each(
            writes,
            |w| &w.task_id,
            |row, w| {
                guard::cancel_write(row, &w.lease, now)?;
                let recorded = cancel::apply(row, w.action, now, &self.policy);
                Ok(Written::of(row, recorded))
            },
        ))
    }

    async fn release(
        &self,
        kind: LeaseKind,
        releases: Vec<Release>,
        now: Timestamp,
    ) -> Result<Vec<WriteOutcome>, StoreError> {
        Ok(self.write_each(
            releases,
            |r| &r.task_id,
            |row, r| {
                guard::release(row, kind, &r.lease, now)?;
                match kind {
                    LeaseKind::Poll => poll::release(row, r.retry_at),
                    LeaseKind::Notify => {
                        outbox::release(&mut row.outbox, r.retry_at, r.error.as_deref())
                    }
                    LeaseKind::Cancel => cancel::release(row, r.retry_at, r.error.as_deref()),
                }
                Ok(Written::of(row, None))
            },
        ))
    }

    async fn request_cancel(
        &self,
        scope: &Scope,
        target: &CancelTarget,
        now: Timestamp,
    ) -> Result<CancelOutcome, StoreError> {
        let mut rows = self.rows();
        let in_scope = |r: &TaskRow| {
            let owner = r.identity.owner == scope.owner;
            let owner = mutation::substitute(Mutant::CancelOwnerNotChecked, owner, |_| true);
            owner && r.identity.thread == scope.thread
        };
        let id = match target {
            CancelTarget::Id(id) => match rows.get(id) {
                Some(r) if in_scope(r) => id.clone(),
                _ => return Ok(CancelOutcome::NotFound),
            },
            CancelTarget::Name(name) => {
                let matches: Vec<&TaskId> = rows
                    .values()
                    .filter(|r| {
                        in_scope(r) && &r.identity.name == name && !r.remote.status.is_terminal()
                    })
                    .map(|r| r.id())
                    .collect();
                match matches.as_slice() {
                    [] => return Ok(CancelOutcome::NotFound),
                    [one] => (*one).clone(),
                    many => return Ok(CancelOutcome::Ambiguous(many.len())),
                }
            }
        };
        let Some(row) = rows.get_mut(&id) else {
            return Ok(CancelOutcome::NotFound);
        };
        let requested = cancel::request(row, now);
        debug_check_row(row);
        Ok(match requested {
            cancel::RequestResult::Requested => CancelOutcome::Requested(id),
            cancel::RequestResult::AlreadyRequested => CancelOutcome::AlreadyRequested(id),
            cancel::RequestResult::AlreadyFinished => CancelOutcome::AlreadyFinished(id),
        })
    }

    async fn record_answer(
        &self,
        scope: &Scope,
        req: AnswerRequest,
        now: Timestamp,
    ) -> Result<AnswerOutcome, StoreError> {
        answer::validate(&req.request_id, req.text.expose())?;
        let mut rows = self.rows();
        let Some(row) = rows.get_mut(&req.task_id).filter(|r| {
            let owner = r.identity.owner == scope.owner;
            let owner = mutation::substitute(Mutant::AnswerOwnerNotChecked, owner, |_| true);
            owner && r.identity.thread == scope.thread
        }) else {
            return Ok(AnswerOutcome::NotFound);
        };
        let recorded = answer::record(row, &req.request_id, req.text.expose(), now);
        let id = req.task_id;
        Ok(match recorded {
            answer::RecordResult::Recorded => AnswerOutcome::Recorded(id),
            answer::RecordResult::AlreadyAnswered => AnswerOutcome::AlreadyAnswered(id),
            answer::RecordResult::AnotherPending => AnswerOutcome::AnotherPending(id),
            answer::RecordResult::NotAsked => AnswerOutcome::NotAsked(id),
        })
    }

    async fn finish_answers(
        &self,
        writes: Vec<AnswerWrite>,
        now: Timestamp,
    ) -> Result<Vec<WriteOutcome>, StoreError> {
        Ok(self.write_each(
            writes,
            |w| &w.task_id,
            |row, w| {
                guard::answer_write(row, &w.lease, now)?;
                answer::apply(row, w.action);
                Ok(Written::of(row, None))
            },
        ))
    }

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
        let rows = self.rows();
        let mut mine: Vec<&TaskRow> = rows
            .values()
            .filter(|r| {
                let owner = r.identity.owner == scope.owner;
                let owner = mutation::substitute(Mutant::ListOwnerNotChecked, owner, |_| true);
                owner && r.identity.thread == scope.thread
            })
            .collect();
        mine.sort_by(|a, b| {
            let newer = match order {
                ListOrder::Newest => b.identity.created_at.cmp(&a.identity.created_at),
                ListOrder::RecentlyUpdated => b.remote.updated_at.cmp(&a.remote.updated_at),
            };
            newer.then_with(|| a.id().cmp(b.id()))
        });
        Ok(mine.into_iter().take(limit).cloned().collect())
    }

    async fn get_task(&self, scope: &Scope, id: &TaskId) -> Result<Option<TaskRow>, StoreError> {
        let rows = self.rows();
        Ok(rows
            .get(id)
            .filter(|r| r.identity.owner == scope.owner && r.identity.thread == scope.thread)
            .cloned())
    }

    async fn admin_rows(
        &self,
        after: Option<TaskId>,
        limit: usize,
    ) -> Result<Vec<TaskRow>, StoreError> {
        let rows = self.rows();
        let range = match &after {
            Some(a) => {
                rows.range::<TaskId, _>((std::ops::Bound::Excluded(a), std::ops::Bound::Unbounded))
            }
            None => rows.range::<TaskId, _>(..),
        };
        Ok(range.take(limit).map(|(_, r)| r.clone()).collect())
    }

    async fn overview(&self) -> Result<Overview, StoreError> {
        let rows = self.rows();
        let mut o = Overview {
            tasks: rows.len() as u64,
            ..Default::default()
        };
        o.by_notify_status = NotifyStatus::ALL
            .iter()
            .map(|s| {
                (
                    *s,
                    rows.values().filter(|r| r.outbox.status == *s).count() as u64,
                )
            })
            .collect();
        o.dead_letters = crate::status::DeadLetterReason::ALL
            .iter()
            .map(|d| {
                (
                    *d,
                    rows.values()
                        .filter(|r| r.outbox.dead_letter.is_some_and(|(_, why)| why == *d))
                        .count() as u64,
                )
            })
            .collect();
        o.cancel_dead_letters = rows
            .values()
            .filter(|r| r.cancel.status == CancelStatus::DeadLetter)
            .count() as u64;
        o.undelivered = rows.values().filter(|r| r.outbox.has_undelivered()).count() as u64;
        o.busy_total = rows.values().map(|r| u64::from(r.outbox.busy_count)).sum();
        Ok(o)
    }

    async fn prune_finished(&self, req: PruneRequest) -> Result<Pruned, StoreError> {
        if req.limit > MAX_BATCH {
            return Err(StoreError::Invalid(format!(
                "a prune deletes at most {MAX_BATCH} tasks"
            )));
        }
        let mut rows = self.rows();
        let mut doomed: Vec<(Timestamp, TaskId)> = rows
            .values()
            .filter(|r| retention::prunable(r, &req))
            .map(|r| (r.remote.updated_at, r.id().clone()))
            .collect();
        doomed.sort();
        doomed.truncate(req.limit);
        for (_, id) in &doomed {
            rows.remove(id);
        }
        Ok(Pruned {
            tasks: doomed.len() as u64,
            runs: 0,
        })
    }

    async fn poll_sooner(&self, req: PollSooner) -> Result<PolledSooner, StoreError> {
        if req.limit > MAX_BATCH {
            return Err(StoreError::Invalid(format!(
                "polls are brought forward at most {MAX_BATCH} at a time"
            )));
        }
        let mut rows = self.rows();
        let mut chosen: Vec<(Option<Timestamp>, TaskId)> = rows
            .values()
            .filter(|r| poll_sooner::selects(r, &req))
            .map(|r| (r.poll.next_poll_at, r.id().clone()))
            .collect();
        chosen.sort();
        chosen.truncate(req.limit);
        let mut done = PolledSooner {
            selected: chosen.len() as u64,
            moved: 0,
        };
        for (rank, (_, id)) in chosen.iter().enumerate() {
            if let Some(row) = rows.get_mut(id) {
                if poll_sooner::bring_forward(row, poll_sooner::slot(&req, rank)) {
                    done.moved += 1;
                }
            }
        }
        Ok(done)
    }

    async fn requeue_dead_letter(
        &self,
        id: &TaskId,
        now: Timestamp,
    ) -> Result<RequeueOutcome, StoreError> {
        let mut rows = self.rows();
        let Some(row) = rows.get_mut(id) else {
            return Ok(RequeueOutcome::NotFound);
        };
        let requeued = outbox::requeue(&mut row.outbox, now);
        debug_check_row(row);
        Ok(match requeued {
            Requeued::NewVersion(v) => RequeueOutcome::Requeued(v),
            Requeued::NotDeadLettered => RequeueOutcome::NotDeadLettered,
            Requeued::NothingToSay => RequeueOutcome::NothingToDeliver,
        })
    }

    async fn requeue_cancel_dead_letter(
        &self,
        id: &TaskId,
        now: Timestamp,
    ) -> Result<CancelRequeueOutcome, StoreError> {
        let mut rows = self.rows();
        let Some(row) = rows.get_mut(id) else {
            return Ok(CancelRequeueOutcome::NotFound);
        };
        Ok(match cancel::requeue(row, now) {
            cancel::CancelRequeued::Requeued => CancelRequeueOutcome::Requeued,
            cancel::CancelRequeued::NotDeadLettered => CancelRequeueOutcome::NotDeadLettered,
            cancel::CancelRequeued::AlreadyFinished => CancelRequeueOutcome::AlreadyFinished,
        })
    }
}
