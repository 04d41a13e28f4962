//! The store port: every [`Store`] call sent to the `db` host.

use super::caller::Caller;
use crate::wire::db::{Envelope, StoreRequest, StoreResponse};
use crate::wire::rpc::call;
use tasklatch_core::ids::TaskId;
use tasklatch_core::lease::LeaseKind;
use tasklatch_core::store::*;
use tasklatch_core::task::TaskRow;
use tasklatch_core::time::Timestamp;

/// The store, reached at the `db` host.
pub struct RpcStore {
    /// Who calls.
    pub caller: Caller,
}

impl RpcStore {
    async fn call(&self, body: StoreRequest) -> Result<StoreResponse, StoreError> {
        let env = Envelope {
            caller: self.caller.name.clone(),
            body,
        };
        let answer = call::<_, StoreResponse>("db", &env, self.caller.ctx.timeouts.store).await;
        answer.map_err(|e| StoreError::Unavailable(e.to_string()))
    }
}

fn mismatch<T>() -> Result<T, StoreError> {
    Err(StoreError::Unavailable(
        "unexpected answer from the store".into(),
    ))
}

impl Store for RpcStore {
    async fn insert_task(&self, row: TaskRow) -> Result<(), StoreError> {
        match self.call(StoreRequest::Insert(Box::new(row))).await? {
            StoreResponse::Unit(r) => r,
            _ => mismatch(),
        }
    }

    async fn settle_submit(
        &self,
        task: &TaskId,
        settlement: SubmitSettlement,
        now: Timestamp,
    ) -> Result<SubmitSettled, StoreError> {
        let req = StoreRequest::SettleSubmit(task.clone(), settlement, now);
        match self.call(req).await? {
            StoreResponse::Settled(r) => r,
            _ => mismatch(),
        }
    }

    async fn claim(&self, kind: LeaseKind, req: ClaimRequest) -> Result<Vec<Claimed>, StoreError> {
        match self.call(StoreRequest::Claim(kind, req)).await? {
            StoreResponse::Claimed(r) => r,
            _ => mismatch(),
        }
    }

    async fn apply_polls(
        &self,
        writes: Vec<PollWrite>,
        now: Timestamp,
    ) -> Result<Vec<WriteOutcome>, StoreError> {
        match self.call(StoreRequest::ApplyPolls(writes, now)).await? {
            StoreResponse::Outcomes(r) => r,
            _ => mismatch(),
        }
    }

    async fn apply_polls_and_claim(
        &self,
        writes: Vec<PollWrite>,
        now: Timestamp,
        hand_off: HandOff,
    ) -> Result<(Vec<WriteOutcome>, Vec<Claimed>), StoreError> {
        match self
            .call(StoreRequest::ApplyPollsAndClaim(writes, now, hand_off))
            .await?
        {
            StoreResponse::OutcomesAndClaimed(r) => r,
            _ => mismatch(),
        }
    }

    async fn finish_notifications(
        &self,
        writes: Vec<NotifyWrite>,
        now: Timestamp,
    ) -> Result<Vec<WriteOutcome>, StoreError> {
        match self
            .call(StoreRequest::FinishNotifications(writes, now))
            .await?
        {
            StoreResponse::Outcomes(r) => r,
            _ => mismatch(),
        }
    }

    async fn finish_cancels(
        &self,
        writes: Vec<CancelWrite>,
        now: Timestamp,
    ) -> Result<Vec<WriteOutcome>, StoreError> {
        match self.call(StoreRequest::FinishCancels(writes, now)).await? {
            StoreResponse::Outcomes(r) => r,
            _ => mismatch(),
        }
    }

    async fn release(
        &self,
        kind: LeaseKind,
        releases: Vec<Release>,
        now: Timestamp,
    ) -> Result<Vec<WriteOutcome>, StoreError> {
        match self
            .call(StoreRequest::Release(kind, releases, now))
            .await?
        {
            StoreResponse::Outcomes(r) => r,
            _ => mismatch(),
        }
    }

    async fn request_cancel(
        &self,
        scope: &Scope,
        target: &CancelTarget,
        now: Timestamp,
    ) -> Result<CancelOutcome, StoreError> {
        match self
            .call(StoreRequest::RequestCancel(
                scope.clone(),
                target.clone(),
                now,
            ))
            .await?
        {
            StoreResponse::Cancel(r) => r,
            _ => mismatch(),
        }
    }

    async fn record_answer(
        &self,
        scope: &Scope,
        answer: AnswerRequest,
        now: Timestamp,
    ) -> Result<AnswerOutcome, StoreError> {
        match self
            .call(StoreRequest::RecordAnswer(scope.clone(), answer, now))
            .await?
        {
            StoreResponse::Answer(r) => r,
            _ => mismatch(),
        }
    }

    async fn finish_answers(
        &self,
        writes: Vec<AnswerWrite>,
        now: Timestamp,
    ) -> Result<Vec<WriteOutcome>, StoreError> {
        match self.call(StoreRequest::FinishAnswers(writes, now)).await? {
            StoreResponse::Outcomes(r) => r,
            _ => mismatch(),
        }
    }

    async fn list_tasks(
        &self,
        scope: &Scope,
        order: ListOrder,
        limit: usize,
    ) -> Result<Vec<TaskRow>, StoreError> {
        match self
            .call(StoreRequest::List(scope.clone(), order, limit))
            .await?
        {
            StoreResponse::Rows(r) => r,
            _ => mismatch(),
        }
    }

    async fn get_task(&self, scope: &Scope, id: &TaskId) -> Result<Option<TaskRow>, StoreError> {
        match self
            .call(StoreRequest::Get(scope.clone(), id.clone()))
            .await?
        {
            StoreResponse::Row(r) => r.map(|row| row.map(|b| *b)),
            _ => mismatch(),
        }
    }

    async fn admin_rows(
        &self,
        after: Option<TaskId>,
        limit: usize,
    ) -> Result<Vec<TaskRow>, StoreError> {
        match self.call(StoreRequest::AdminRows(after, limit)).await? {
            StoreResponse::Rows(r) => r,
            _ => mismatch(),
        }
    }

    async fn overview(&self) -> Result<Overview, StoreError> {
        match self.call(StoreRequest::Overview).await? {
            StoreResponse::Overview(r) => r,
            _ => mismatch(),
        }
    }

    async fn requeue_dead_letter(
        &self,
        id: &TaskId,
        now: Timestamp,
    ) -> Result<RequeueOutcome, StoreError> {
        match self
            .call(StoreRequest::RequeueDeadLetter(id.clone(), now))
            .await?
        {
            StoreResponse::Requeue(r) => r,
            _ => mismatch(),
        }
    }

    async fn poll_sooner(&self, req: PollSooner) -> Result<PolledSooner, StoreError> {
        match self.call(StoreRequest::PollSooner(req)).await? {
            StoreResponse::PolledSooner(r) => r,
            _ => mismatch(),
        }
    }

    async fn requeue_cancel_dead_letter(
        &self,
        id: &TaskId,
        now: Timestamp,
    ) -> Result<CancelRequeueOutcome, StoreError> {
        match self
            .call(StoreRequest::RequeueCancelDeadLetter(id.clone(), now))
            .await?
        {
            StoreResponse::CancelRequeue(r) => r,
            _ => mismatch(),
        }
    }

    async fn prune_finished(&self, req: PruneRequest) -> Result<Pruned, StoreError> {
        match self.call(StoreRequest::PruneFinished(req)).await? {
            StoreResponse::Pruned(r) => r,
            _ => mismatch(),
        }
    }

    async fn store_time(&self) -> Result<Option<Timestamp>, StoreError> {
        match self.call(StoreRequest::Time).await? {
            StoreResponse::Time(r) => r,
            _ => mismatch(),
        }
    }
}
