//! The user-facing calls: list, detail, cancel (by id or name), answer, and the per-run context
//! projection; and the operator's requeue of a dead letter (unscoped). The user calls are
//! scoped to (owner, thread); anything else is "not found" (DOMAIN §6), and
//! every answer is a whitelisted public shape (DOMAIN §8) — never a row.

use super::Engine;
use crate::ids::TaskId;
use crate::policy::{MAX_CONTEXT_TASKS, MAX_LIST};
use crate::ports::{Clock, Driver, Launcher};
use crate::store::{
    AnswerOutcome, AnswerRequest, CancelOutcome, CancelTarget, ListOrder, RequeueOutcome, Scope,
    Store, StoreError,
};
use crate::text::{context_projection, ContextEntry, PublicTask};

/// Why a user call failed.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub enum ApiError {
    /// No such task in the caller's scope.
    #[error("task not found")]
    NotFound,
    /// The store failed.
    #[error("{0}")]
    Store(#[from] StoreError),
}

impl<S: Store, D: Driver, L: Launcher, C: Clock> Engine<S, D, L, C> {
    /// The caller's tasks in this thread, newest first: the first [`MAX_LIST`] (the bound of
    /// one listing).
    pub async fn list(&self, scope: &Scope) -> Result<Vec<PublicTask>, ApiError> {
        Ok(self
            .store
            .list_tasks(scope, ListOrder::Newest, MAX_LIST)
            .await?
            .iter()
            .map(PublicTask::from_row)
            .collect())
    }

    /// One of the caller's tasks; [`ApiError::NotFound`] for anything outside the scope.
    pub async fn detail(&self, scope: &Scope, id: &TaskId) -> Result<PublicTask, ApiError> {
        self.store
            .get_task(scope, id)
            .await?
            .map(|r| PublicTask::from_row(&r))
            .ok_or(ApiError::NotFound)
    }

    /// Requests a cancel. Repeats change nothing; other owners' tasks are not found.
    pub async fn cancel(
        &self,
        scope: &Scope,
        target: &CancelTarget,
    ) -> Result<CancelOutcome, ApiError> {
        Ok(self
            .store
            .request_cancel(scope, target, self.clock.now())
            .await?)
    }

    /// Operator action, unscoped: requeues task `id`'s dead-lettered notification
    /// ([`Store::requeue_dead_letter`]) at the engine's now.
    pub async fn requeue_dead_letter(&self, id: &TaskId) -> Result<RequeueOutcome, StoreError> {
        self.store.requeue_dead_letter(id, self.clock.now()).await
    }

    /// Records the user's answer to an input request of one of the caller's tasks; the next
    /// poll of the task sends it, at most once. Other owners' tasks are not found.
    pub async fn answer(
        &self,
        scope: &Scope,
        answer: AnswerRequest,
    ) -> Result<AnswerOutcome, ApiError> {
        Ok(self
            .store
            .record_answer(scope, answer, self.clock.now())
            .await?)
    }

    /// The context given to each agent run: at most [`MAX_CONTEXT_TASKS`] tasks, four fields
    /// each — and no more rows read than that (the most recently updated, as the projection
    /// orders them).
    pub async fn context(&self, scope: &Scope) -> Result<Vec<ContextEntry>, ApiError> {
        let rows = self
            .store
            .list_tasks(scope, ListOrder::RecentlyUpdated, MAX_CONTEXT_TASKS)
            .await?;
        Ok(context_projection(&rows))
    }
}
