//! A [`Store`] that counts and logs what the engine's writes mean, around any store.
//!
//! Every fact the metrics need passes through the store: claims, each write with its outcome
//! (applied or refused, and why), the action a notification or cancel write carries (a run
//! started, a 409, a delivery, a dead letter, a counted failure), and whether a write recorded
//! a new event version. So the worker derives its metrics here instead of changing the engine,
//! and logs every failure with the task's id — and never a secret: the texts logged are the
//! bounded, redacted errors the engine stores and shows anyway (DOMAIN §4, §8).
//!
//! **Notification latency** is measured from the moment a notification became due to the
//! moment the write recording its accepted launch is made (`dispatched`, or the run's end when
//! the claim that launched it saw it end): the claim's row carries its
//! `due_at`, the launch's write comes back through here with `now`. For a new event recorded
//! while no dispatch is in flight, `due_at` is the moment it was recorded, so this is "event
//! recorded → run started". For a version recorded during another dispatch it counts from the
//! end of that dispatch; after a 409 or a retry it counts from the retry time (the time spent
//! waiting for a busy thread is not the worker's latency).

use crate::metrics::{DeadLetter, DeliveryFailure, Metrics, Unanswered};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use tasklatch_core::ids::TaskId;
use tasklatch_core::lease::{LeaseKind, LeaseToken};
use tasklatch_core::policy::{bounded, MAX_BATCH, MAX_SHOWN_ERROR};
use tasklatch_core::status::NotifyStatus;
use tasklatch_core::store::{
    AnswerOutcome, AnswerRequest, AnswerWrite, CancelOutcome, CancelRequeueOutcome, CancelTarget,
    CancelWrite, ClaimRequest, Claimed, HandOff, ListOrder, NotifyWrite, Overview, PollSooner,
    PollWrite, PolledSooner, PruneRequest, Pruned, Release, RequeueOutcome, Scope, Store,
    StoreError, SubmitSettled, SubmitSettlement, WriteOutcome,
};
use tasklatch_core::task::TaskRow;
use tasklatch_core::time::Timestamp;
use tasklatch_core::transitions::answer::AnswerAction;
use tasklatch_core::transitions::cancel::CancelAction;
use tasklatch_core::transitions::outbox::{NotifyAction, Recorded};

/// Notification claims remembered for the latency, at most (a lane holds one batch at a time;
/// entries of writes that never came are dropped when the map is full).
const MAX_PENDING_LAUNCHES: usize = 4 * MAX_BATCH;

/// `S` with metrics and failure logs. One per lane: the latency bookkeeping is per claimer.
pub struct Metered<S> {
    inner: S,
    metrics: Arc<Metrics>,
    due: Mutex<BTreeMap<(TaskId, LeaseToken), Timestamp>>,
}

impl<S> Metered<S> {
    /// Wraps `inner`, counting into `metrics`.
    pub fn new(inner: S, metrics: Arc<Metrics>) -> Self {
        Metered {
            inner,
            metrics,
            due: Mutex::new(BTreeMap::new()),
        }
    }

    /// The wrapped store.
    pub fn inner(&self) -> &S {
        &self.inner
    }

    fn remember_due(&self, claimed: &[Claimed]) {
        let mut due = self.due.lock().unwrap_or_else(|p| p.into_inner());
        if due.len() + claimed.len() > MAX_PENDING_LAUNCHES {
            due.clear();
        }
        for c in claimed {
            if c.row.outbox.status != NotifyStatus::Dispatched {
                due.insert((c.row.id().clone(), c.lease.token), c.row.outbox.due_at);
            }
        }
    }

    fn take_due(&self, task: &TaskId, token: LeaseToken) -> Option<Timestamp> {
        let mut due = self.due.lock().unwrap_or_else(|p| p.into_inner());
        due.remove(&(task.clone(), token))
    }

    fn failed<T>(&self, op: &'static str, r: &Result<T, StoreError>) {
        if let Err(e) = r {
            self.metrics.store_error(op);
            tracing::warn!(op, error = %e, "store call failed");
        }
    }

    fn outcome(&self, kind: LeaseKind, task: &TaskId, outcome: &WriteOutcome) {
        match outcome {
            Ok(written) => {
                self.metrics.applied(kind);
                if let Some(Recorded::NewVersion(v)) = written.recorded {
                    self.metrics.event_recorded();
                    tracing::debug!(task = %task, version = v, "event recorded");
                }
            }
            Err(refusal) => {
                self.metrics.refused(kind, *refusal);
                tracing::debug!(task = %task, loop_kind = kind.as_str(), ?refusal, "write refused");
            }
        }
    }

    fn polls_written(&self, writes: &[PollWrite], outcomes: &[WriteOutcome]) {
        for (w, o) in writes.iter().zip(outcomes) {
            self.poll_written(w, o);
        }
    }

    fn poll_written(&self, w: &PollWrite, outcome: &WriteOutcome) {
        self.outcome(LeaseKind::Poll, &w.task_id, outcome);
        if let (Some(e), true) = (&w.update.last_error, w.update.consecutive_errors > 0) {
            // Counted by server in `peers::PeerDriver`. Logged at debug: the engine warns once per episode, when tracking degrades.
            tracing::debug!(task = %w.task_id, class = e.class.as_str(), errors = w.update.consecutive_errors, error = ?shown(&e.message), "poll failed");
        }
    }

    fn notify_written(&self, w: &NotifyWrite, outcome: &WriteOutcome, now: Timestamp) {
        self.outcome(LeaseKind::Notify, &w.task_id, outcome);
        let due = self.take_due(&w.task_id, w.lease.token);
        if outcome.is_err() {
            return;
        }
        let (m, task, v) = (&self.metrics, &w.task_id, w.dispatch_version);
        // A run's end written by a claim that was not dispatched: the run was launched and
        // confirmed in that claim, so the write records its start too.
        let confirmed_in_claim = matches!(
            w.action,
            NotifyAction::RunSucceeded | NotifyAction::RunFailed(_)
        ) && due.is_some();
        if confirmed_in_claim {
            m.run_started(due.map(|d| now.since(d)));
            tracing::debug!(task = %task, version = v, "run started and ended within its claim");
        }
        match &w.action {
            NotifyAction::Launched(run) => {
                m.run_started(due.map(|d| now.since(d)));
                tracing::debug!(task = %task, version = v, run = %run, "run started");
            }
            NotifyAction::Busy => {
                m.busy();
                tracing::info!(task = %task, version = v, "thread busy (409); retrying later");
            }
            NotifyAction::ThreadGone => {
                m.dead_letter(DeadLetter::ThreadGone);
                tracing::debug!(task = %task, version = v, "thread gone (404): dead letter written");
            }
            NotifyAction::LaunchFailed(e) => {
                m.delivery_failed(DeliveryFailure::Launch);
                tracing::debug!(task = %task, version = v, error = ?shown(e), "launch failure written");
            }
            NotifyAction::RunSucceeded => {
                m.delivered();
                let latency_ms = due.map(|d| now.since(d).as_millis() as u64);
                tracing::info!(task = %task, version = v, latency_ms, "notification delivered");
            }
            NotifyAction::RunFailed(e) => {
                m.delivery_failed(DeliveryFailure::Run);
                tracing::debug!(task = %task, version = v, error = ?shown(e), "run failure written");
            }
            NotifyAction::RunOutlived(e) => {
                m.delivery_failed(DeliveryFailure::Run);
                tracing::debug!(task = %task, version = v, error = ?shown(e), "run outlived max_run_life; its id is kept and looked at before the next attempt");
            }
            // Waited out, never a failure: the engine logs the episode's first unanswered call.
            NotifyAction::LaunchUnavailable(_) | NotifyAction::LookupUnavailable(_) => {
                m.unanswered(match w.action {
                    NotifyAction::LaunchUnavailable(_) => Unanswered::Launch,
                    _ => Unanswered::Lookup,
                });
                let ended = outcome.as_ref().is_ok_and(|o| o.notified_version >= v);
                if ended {
                    m.dead_letter(DeadLetter::Unavailable);
                    tracing::warn!(task = %task, version = v, "the Agent Server stayed unavailable for engine.max_unavailable_ms: dead letter");
                }
            }
            NotifyAction::RunPending => {}
            NotifyAction::BudgetExhausted => {
                m.dead_letter(DeadLetter::Budget);
                tracing::debug!(task = %task, version = v, "failure budget spent: dead letter written");
            }
        }
    }

    fn cancel_written(&self, w: &CancelWrite, outcome: &WriteOutcome) {
        self.outcome(LeaseKind::Cancel, &w.task_id, outcome);
        match &w.action {
            CancelAction::Finished(_) => {
                tracing::debug!(task = %w.task_id, applied = outcome.is_ok(), "remote cancel applied");
            }
            CancelAction::Acknowledged(_) => {
                tracing::debug!(task = %w.task_id, applied = outcome.is_ok(), "remote cancel acknowledged: polling resumes");
            }
            // Refusals and unanswered cancels are counted by server in `peers::PeerDriver`.
            CancelAction::Failed(e) => {
                tracing::debug!(task = %w.task_id, error = ?shown(e), "remote cancel failure written");
            }
            // Waited out, never a failure: the engine logs the episode's first unanswered call.
            CancelAction::Unavailable(_) => {}
            CancelAction::BudgetExhausted if outcome.is_ok() => {
                self.metrics.dead_letter(DeadLetter::CancelBudget);
                tracing::debug!(task = %w.task_id, "cancel budget spent: cancel dead letter written");
            }
            CancelAction::BudgetExhausted => {}
        }
    }

    fn released(&self, kind: LeaseKind, r: &Release, outcome: &WriteOutcome) {
        if kind == LeaseKind::Notify {
            self.take_due(&r.task_id, r.lease.token);
        }
        if let Err(refusal) = outcome {
            self.metrics.refused(kind, *refusal);
            return;
        }
        let counted = r.error.is_some() && kind != LeaseKind::Poll;
        self.metrics.released(kind, counted);
        match &r.error {
            Some(e) => {
                tracing::warn!(task = %r.task_id, loop_kind = kind.as_str(), error = ?shown(e), "lease released after an error")
            }
            None => tracing::debug!(task = %r.task_id, loop_kind = kind.as_str(), "lease released"),
        }
    }
}

/// The kind of an answer outcome, for logs (never its error text, which could quote the server).
fn answer_kind(a: &AnswerAction) -> &'static str {
    match a {
        AnswerAction::Sent => "sent",
        AnswerAction::Unconfirmed(_) => "unconfirmed",
        AnswerAction::Failed(_) => "failed",
        AnswerAction::NotSent => "not_sent",
    }
}

/// An error text as logged: bounded like an error shown to a user.
fn shown(text: &str) -> String {
    bounded(text, MAX_SHOWN_ERROR)
}

impl<S: Store> Store for Metered<S> {
    async fn insert_task(&self, row: TaskRow) -> Result<(), StoreError> {
        let (task, recorded) = (row.id().clone(), row.outbox.event_version > 0);
        let r = self.inner.insert_task(row).await;
        self.failed("insert_task", &r);
        if r.is_ok() && recorded {
            self.metrics.event_recorded();
            tracing::debug!(task = %task, version = 1, "event recorded at submit");
        }
        r
    }

    async fn settle_submit(
        &self,
        task: &TaskId,
        settlement: SubmitSettlement,
        now: Timestamp,
    ) -> Result<SubmitSettled, StoreError> {
        let records =
            matches!(&settlement, SubmitSettlement::Started(row) if row.outbox.event_version > 0);
        let r = self.inner.settle_submit(task, settlement, now).await;
        self.failed("settle_submit", &r);
        if records && r == Ok(SubmitSettled::Recorded) {
            self.metrics.event_recorded();
            tracing::debug!(task = %task, version = 1, "event recorded with the submit's handle");
        }
        r
    }

    async fn claim(&self, kind: LeaseKind, req: ClaimRequest) -> Result<Vec<Claimed>, StoreError> {
        let r = self.inner.claim(kind, req).await;
        self.failed("claim", &r);
        if let Ok(claimed) = &r {
            self.metrics.claimed(kind, claimed.len());
            if kind == LeaseKind::Notify {
                self.remember_due(claimed);
            }
        }
        r
    }

    async fn apply_polls(
        &self,
        writes: Vec<PollWrite>,
        now: Timestamp,
    ) -> Result<Vec<WriteOutcome>, StoreError> {
        let r = self.inner.apply_polls(writes.clone(), now).await;
        self.failed("apply_polls", &r);
        if let Ok(outcomes) = &r {
            self.polls_written(&writes, outcomes);
        }
        r
    }

    async fn apply_polls_and_claim(
        &self,
        writes: Vec<PollWrite>,
        now: Timestamp,
        hand_off: HandOff,
    ) -> Result<(Vec<WriteOutcome>, Vec<Claimed>), StoreError> {
        let r = self
            .inner
            .apply_polls_and_claim(writes.clone(), now, hand_off)
            .await;
        self.failed("apply_polls_and_claim", &r);
        if let Ok((outcomes, claimed)) = &r {
            self.polls_written(&writes, outcomes);
            self.metrics.claimed(LeaseKind::Notify, claimed.len());
            self.remember_due(claimed);
        }
        r
    }

    async fn finish_notifications(
        &self,
        writes: Vec<NotifyWrite>,
        now: Timestamp,
    ) -> Result<Vec<WriteOutcome>, StoreError> {
        let r = self.inner.finish_notifications(writes.clone(), now).await;
        self.failed("finish_notifications", &r);
        if let Ok(outcomes) = &r {
            for (w, o) in writes.iter().zip(outcomes) {
                self.notify_written(w, o, now);
            }
        }
        r
    }

    async fn finish_cancels(
        &self,
        writes: Vec<CancelWrite>,
        now: Timestamp,
    ) -> Result<Vec<WriteOutcome>, StoreError> {
        let r = self.inner.finish_cancels(writes.clone(), now).await;
        self.failed("finish_cancels", &r);
        if let Ok(outcomes) = &r {
            for (w, o) in writes.iter().zip(outcomes) {
                self.cancel_written(w, o);
            }
        }
        r
    }

    async fn release(
        &self,
        kind: LeaseKind,
        releases: Vec<Release>,
        now: Timestamp,
    ) -> Result<Vec<WriteOutcome>, StoreError> {
        let r = self.inner.release(kind, releases.clone(), now).await;
        self.failed("release", &r);
        if let Ok(outcomes) = &r {
            for (rel, o) in releases.iter().zip(outcomes) {
                self.released(kind, rel, o);
            }
        }
        r
    }

    async fn request_cancel(
        &self,
        scope: &Scope,
        target: &CancelTarget,
        now: Timestamp,
    ) -> Result<CancelOutcome, StoreError> {
        let r = self.inner.request_cancel(scope, target, now).await;
        self.failed("request_cancel", &r);
        if let Ok(CancelOutcome::Requested(task)) = &r {
            tracing::info!(task = %task, "cancel requested");
        }
        r
    }

    async fn record_answer(
        &self,
        scope: &Scope,
        answer: AnswerRequest,
        now: Timestamp,
    ) -> Result<AnswerOutcome, StoreError> {
        let r = self.inner.record_answer(scope, answer, now).await;
        self.failed("record_answer", &r);
        if let Ok(AnswerOutcome::Recorded(task)) = &r {
            tracing::info!(task = %task, "answer recorded");
        }
        r
    }

    async fn finish_answers(
        &self,
        writes: Vec<AnswerWrite>,
        now: Timestamp,
    ) -> Result<Vec<WriteOutcome>, StoreError> {
        let r = self.inner.finish_answers(writes.clone(), now).await;
        self.failed("finish_answers", &r);
        if let Ok(outcomes) = &r {
            for (w, o) in writes.iter().zip(outcomes) {
                match o {
                    Ok(_) => {
                        tracing::info!(task = %w.task_id, outcome = answer_kind(&w.action), "answer attempt finished")
                    }
                    Err(refusal) => {
                        tracing::info!(task = %w.task_id, ?refusal, "answer outcome refused")
                    }
                }
            }
        }
        r
    }

    async fn list_tasks(
        &self,
        scope: &Scope,
        order: ListOrder,
        limit: usize,
    ) -> Result<Vec<TaskRow>, StoreError> {
        let r = self.inner.list_tasks(scope, order, limit).await;
        self.failed("list_tasks", &r);
        r
    }

    async fn get_task(&self, scope: &Scope, id: &TaskId) -> Result<Option<TaskRow>, StoreError> {
        let r = self.inner.get_task(scope, id).await;
        self.failed("get_task", &r);
        r
    }

    async fn admin_rows(
        &self,
        after: Option<TaskId>,
        limit: usize,
    ) -> Result<Vec<TaskRow>, StoreError> {
        let r = self.inner.admin_rows(after, limit).await;
        self.failed("admin_rows", &r);
        r
    }

    async fn overview(&self) -> Result<Overview, StoreError> {
        let r = self.inner.overview().await;
        self.failed("overview", &r);
        r
    }

    async fn requeue_dead_letter(
        &self,
        id: &TaskId,
        now: Timestamp,
    ) -> Result<RequeueOutcome, StoreError> {
        let r = self.inner.requeue_dead_letter(id, now).await;
        self.failed("requeue_dead_letter", &r);
        r
    }

    async fn poll_sooner(&self, req: PollSooner) -> Result<PolledSooner, StoreError> {
        let r = self.inner.poll_sooner(req).await;
        self.failed("poll_sooner", &r);
        r
    }

    async fn requeue_cancel_dead_letter(
        &self,
        id: &TaskId,
        now: Timestamp,
    ) -> Result<CancelRequeueOutcome, StoreError> {
        let r = self.inner.requeue_cancel_dead_letter(id, now).await;
        self.failed("requeue_cancel_dead_letter", &r);
        r
    }

    async fn prune_finished(&self, req: PruneRequest) -> Result<Pruned, StoreError> {
        let r = self.inner.prune_finished(req).await;
        self.failed("prune_finished", &r);
        r
    }

    async fn store_time(&self) -> Result<Option<Timestamp>, StoreError> {
        let r = self.inner.store_time().await;
        self.failed("store_time", &r);
        r
    }
}
