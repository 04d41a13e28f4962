//! The store protocol between clients and the `db` host, and the dispatch of a request onto
//! any [`Store`].

use serde::{Deserialize, Serialize};
use tasklatch_core::ids::TaskId;
use tasklatch_core::lease::LeaseKind;
use tasklatch_core::store::*;
use tasklatch_core::task::TaskRow;
use tasklatch_core::time::Timestamp;

/// A store call.
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
pub enum StoreRequest {
    /// [`Store::insert_task`].
    Insert(Box<TaskRow>),
    /// [`Store::settle_submit`].
    SettleSubmit(TaskId, SubmitSettlement, Timestamp),
    /// [`Store::claim`].
    Claim(LeaseKind, ClaimRequest),
    /// [`Store::apply_polls`].
    ApplyPolls(Vec<PollWrite>, Timestamp),
    /// [`Store::apply_polls_and_claim`].
    ApplyPollsAndClaim(Vec<PollWrite>, Timestamp, HandOff),
    /// [`Store::finish_notifications`].
    FinishNotifications(Vec<NotifyWrite>, Timestamp),
    /// [`Store::finish_cancels`].
    FinishCancels(Vec<CancelWrite>, Timestamp),
    /// [`Store::release`].
    Release(LeaseKind, Vec<Release>, Timestamp),
    /// [`Store::request_cancel`].
    RequestCancel(Scope, CancelTarget, Timestamp),
    /// [`Store::record_answer`].
    RecordAnswer(Scope, AnswerRequest, Timestamp),
    /// [`Store::finish_answers`].
    FinishAnswers(Vec<AnswerWrite>, Timestamp),
    /// [`Store::list_tasks`].
    List(Scope, ListOrder, usize),
    /// [`Store::get_task`].
    Get(Scope, TaskId),
    /// [`Store::admin_rows`].
    AdminRows(Option<TaskId>, usize),
    /// [`Store::overview`].
    Overview,
    /// [`Store::requeue_dead_letter`].
    RequeueDeadLetter(TaskId, Timestamp),
    /// [`Store::poll_sooner`].
    PollSooner(PollSooner),
    /// [`Store::requeue_cancel_dead_letter`].
    RequeueCancelDeadLetter(TaskId, Timestamp),
    /// [`Store::prune_finished`].
    PruneFinished(PruneRequest),
    /// [`Store::store_time`]: answered by the `db` host itself with the world's time, never
    /// by a backend (a real database's clock would make a seed's history depend on the day).
    Time,
}

/// A store call's answer.
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
pub enum StoreResponse {
    /// Insert.
    Unit(Result<(), StoreError>),
    /// Claim.
    Claimed(Result<Vec<Claimed>, StoreError>),
    /// Guarded writes.
    Outcomes(Result<Vec<WriteOutcome>, StoreError>),
    /// Poll results with the notifications they claimed.
    OutcomesAndClaimed(Result<(Vec<WriteOutcome>, Vec<Claimed>), StoreError>),
    /// A submit settled.
    Settled(Result<SubmitSettled, StoreError>),
    /// Cancel request.
    Cancel(Result<CancelOutcome, StoreError>),
    /// Answer.
    Answer(Result<AnswerOutcome, StoreError>),
    /// Rows.
    Rows(Result<Vec<TaskRow>, StoreError>),
    /// One row.
    Row(Result<Option<Box<TaskRow>>, StoreError>),
    /// Counts.
    Overview(Result<Overview, StoreError>),
    /// Requeue.
    Requeue(Result<RequeueOutcome, StoreError>),
    /// Polls brought forward.
    PolledSooner(Result<PolledSooner, StoreError>),
    /// Requeue of a cancel dead letter.
    CancelRequeue(Result<CancelRequeueOutcome, StoreError>),
    /// Prune.
    Pruned(Result<Pruned, StoreError>),
    /// The store's time.
    Time(Result<Option<Timestamp>, StoreError>),
}

impl StoreRequest {
    /// The answer to this request that carries `e`: what a store that failed it replies.
    pub fn failed(&self, e: StoreError) -> StoreResponse {
        use StoreRequest as Q;
        use StoreResponse as A;
        match self {
            Q::Insert(_) => A::Unit(Err(e)),
            Q::SettleSubmit(..) => A::Settled(Err(e)),
            Q::Claim(..) => A::Claimed(Err(e)),
            Q::ApplyPolls(..)
            | Q::FinishNotifications(..)
            | Q::FinishCancels(..)
            | Q::Release(..)
            | Q::FinishAnswers(..) => A::Outcomes(Err(e)),
            Q::ApplyPollsAndClaim(..) => A::OutcomesAndClaimed(Err(e)),
            Q::RequestCancel(..) => A::Cancel(Err(e)),
            Q::RecordAnswer(..) => A::Answer(Err(e)),
            Q::List(..) | Q::AdminRows(..) => A::Rows(Err(e)),
            Q::Get(..) => A::Row(Err(e)),
            Q::Overview => A::Overview(Err(e)),
            Q::RequeueDeadLetter(..) => A::Requeue(Err(e)),
            Q::RequeueCancelDeadLetter(..) => A::CancelRequeue(Err(e)),
            Q::PollSooner(..) => A::PolledSooner(Err(e)),
            Q::PruneFinished(..) => A::Pruned(Err(e)),
            Q::Time => A::Time(Err(e)),
        }
    }
}

/// A request with the name of the host that sent it.
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
pub struct Envelope<T> {
    /// The calling host (and lane).
    pub caller: String,
    /// The request.
    pub body: T,
}

/// Runs `req` on `store`.
pub async fn dispatch<S: Store>(store: &S, req: StoreRequest) -> StoreResponse {
    match req {
        StoreRequest::Insert(row) => StoreResponse::Unit(store.insert_task(*row).await),
        StoreRequest::SettleSubmit(task, settlement, now) => {
            StoreResponse::Settled(store.settle_submit(&task, settlement, now).await)
        }
        StoreRequest::Claim(kind, r) => StoreResponse::Claimed(store.claim(kind, r).await),
        StoreRequest::ApplyPolls(w, now) => {
            StoreResponse::Outcomes(store.apply_polls(w, now).await)
        }
        StoreRequest::ApplyPollsAndClaim(w, now, hand_off) => {
            StoreResponse::OutcomesAndClaimed(store.apply_polls_and_claim(w, now, hand_off).await)
        }
        StoreRequest::FinishNotifications(w, now) => {
            StoreResponse::Outcomes(store.finish_notifications(w, now).await)
        }
        StoreRequest::FinishCancels(w, now) => {
            StoreResponse::Outcomes(store.finish_cancels(w, now).await)
        }
        StoreRequest::Release(kind, r, now) => {
            StoreResponse::Outcomes(store.release(kind, r, now).await)
        }
        StoreRequest::RequestCancel(scope, target, now) => {
            StoreResponse::Cancel(store.request_cancel(&scope, &target, now).await)
        }
        StoreRequest::RecordAnswer(scope, answer, now) => {
            StoreResponse::Answer(store.record_answer(&scope, answer, now).await)
        }
        StoreRequest::FinishAnswers(w, now) => {
            StoreResponse::Outcomes(store.finish_answers(w, now).await)
        }
        StoreRequest::List(scope, order, limit) => {
            StoreResponse::Rows(store.list_tasks(&scope, order, limit).await)
        }
        StoreRequest::Get(scope, id) => {
            StoreResponse::Row(store.get_task(&scope, &id).await.map(|r| r.map(Box::new)))
        }
        StoreRequest::AdminRows(after, limit) => {
            StoreResponse::Rows(store.admin_rows(after, limit).await)
        }
        StoreRequest::Overview => StoreResponse::Overview(store.overview().await),
        StoreRequest::RequeueDeadLetter(id, now) => {
            StoreResponse::Requeue(store.requeue_dead_letter(&id, now).await)
        }
        StoreRequest::PollSooner(req) => StoreResponse::PolledSooner(store.poll_sooner(req).await),
        StoreRequest::RequeueCancelDeadLetter(id, now) => {
            StoreResponse::CancelRequeue(store.requeue_cancel_dead_letter(&id, now).await)
        }
        StoreRequest::PruneFinished(req) => StoreResponse::Pruned(store.prune_finished(req).await),
        StoreRequest::Time => StoreResponse::Time(store.store_time().await),
    }
}
