//! Thread ownership at submit (DOMAIN §9): a task is bound only to a thread its owner owns.
//!
//! The agent server records who owns a thread (`agent_server.owner_metadata_key` of its
//! metadata; `check_thread_owner = false` opts out for single-user deployments). Before a submit
//! starts anything remote, the thread is looked up there: a thread of another owner, a thread
//! that does not exist, and an id the agent server cannot hold are all answered with the same
//! `404 not found` body, so the answer tells the caller nothing about other users' threads. When
//! the agent server cannot be asked, the answer is 503 and nothing was started. The launcher
//! checks again before every run (`AgentServerLauncher::thread_usable`).

use super::error::ApiError;
use axum::http::StatusCode;
use std::future::Future;
use std::pin::Pin;
use tasklatch_agent_server::AgentServerLauncher;
use tasklatch_core::ids::{OwnerId, ThreadId};
use tasklatch_core::store::Scope;

/// The future a [`ThreadOwners`] check returns.
pub type OwnerCheck<'a> = Pin<Box<dyn Future<Output = Result<bool, String>> + Send + 'a>>;

/// Who may bind tasks to which thread, as the agent server records it.
pub trait ThreadOwners: Send + Sync + 'static {
    /// `Ok(true)` when a task of `owner` may be bound to `thread`; `Ok(false)` when the thread
    /// is another owner's, missing, or an id the agent server cannot hold (never told apart);
    /// `Err` (bounded, secret-free) when the agent server gave no usable answer. Ends within
    /// the agent server's `request_timeout`.
    fn usable<'a>(&'a self, owner: &'a OwnerId, thread: &'a ThreadId) -> OwnerCheck<'a>;
}

impl ThreadOwners for AgentServerLauncher {
    fn usable<'a>(&'a self, owner: &'a OwnerId, thread: &'a ThreadId) -> OwnerCheck<'a> {
        Box::pin(self.thread_usable(owner, thread))
    }
}

/// `Ok` when the scope's owner may submit into the scope's thread; else the API's answer:
/// 404 `not found` (the same body as any missing resource) or 503 (nothing was started).
pub async fn check_submit_thread(owners: &dyn ThreadOwners, scope: &Scope) -> Result<(), ApiError> {
    match owners.usable(&scope.owner, &scope.thread).await {
        Ok(true) => Ok(()),
        Ok(false) => Err(ApiError::not_found()),
        Err(why) => {
            tracing::warn!(error = %why, "thread ownership could not be checked at submit");
            Err(ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "the agent server could not confirm the thread; nothing was started, try again",
            ))
        }
    }
}
