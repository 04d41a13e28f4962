//! Submit with compensation (DOMAIN §7): call the driver, then persist the handle before
//! returning. If persisting fails — or the submit future is dropped midway — the remote task is
//! cancelled as compensation (best effort) and the original error is kept. A duplicate remote
//! handle is rejected without cancelling the task that already has it.

use super::{Engine, PendingCompensation, COMPENSATION_ATTEMPTS};
use crate::identity::Identity;
use crate::ids::{IdSource, ServerId, TaskId};
use crate::policy::{bounded, MAX_ID, MAX_NAME, MAX_SHOWN_ERROR};
use crate::ports::{Clock, Driver, Launcher, SubmitRequest};
use crate::secret::RemoteHandle;
use crate::snapshot;
use crate::store::{Scope, Store, StoreError};
use crate::transitions::submit::new_row;
use std::sync::Mutex;

/// A user's request to start a remote task.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct SubmitCommand {
    /// The caller: the task is bound to this owner and thread.
    pub scope: Scope,
    /// The remote server.
    pub server: ServerId,
    /// The task's name.
    pub name: String,
    /// The tool to call on the server.
    pub tool: String,
    /// The tool's arguments (see [`SubmitRequest::arguments`]).
    pub arguments: String,
}

/// Why a submit failed. No variant carries a secret.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub enum SubmitError {
    /// The request breaks a limit; nothing was sent to the remote server.
    #[error("invalid request: {0}")]
    Invalid(String),
    /// The remote server did not accept the task.
    #[error("the remote server did not accept the task: {0}")]
    Remote(String),
    /// The remote server returned a handle that is already tracked; the existing task is untouched.
    #[error("the remote server returned a task that is already tracked")]
    Duplicate,
    /// The task could not be persisted; its remote task was cancelled as compensation.
    #[error("the task could not be saved: {0}")]
    Store(StoreError),
}

/// Queues a compensating cancel when dropped while armed.
struct Armed<'a> {
    queue: &'a Mutex<Vec<PendingCompensation>>,
    server: ServerId,
    handle: Option<RemoteHandle>,
}

impl Armed<'_> {
    fn disarm(mut self) -> Option<RemoteHandle> {
        self.handle.take()
    }
}

impl Drop for Armed<'_> {
    fn drop(&mut self) {
        if let Some(handle) = self.handle.take() {
            let mut queue = self.queue.lock().unwrap_or_else(|p| p.into_inner());
            queue.push(PendingCompensation {
                server: self.server.clone(),
                handle,
                attempts: 0,
            });
        }
    }
}

impl<S: Store, D: Driver, L: Launcher, C: Clock> Engine<S, D, L, C> {
    /// Starts a remote task and persists it, returning its local id (DOMAIN §7).
    pub async fn submit(
        &self,
        ids: &dyn IdSource,
        cmd: SubmitCommand,
    ) -> Result<TaskId, SubmitError> {
        check_request(&cmd)?;
        let req = SubmitRequest {
            server: cmd.server.clone(),
            owner: cmd.scope.owner.clone(),
            name: cmd.name.clone(),
            tool: cmd.tool,
            arguments: cmd.arguments,
        };
        let submitted = self
            .driver
            .submit(&req)
            .await
            .map_err(|e| SubmitError::Remote(bounded(&e.to_string(), MAX_SHOWN_ERROR)))?;
        let armed = Armed {
            queue: &self.compensations,
            server: cmd.server.clone(),
            handle: Some(submitted.handle.clone()),
        };
        let handle = submitted.handle;
        let now = self.clock.now();
        let first = submitted.report.map(|r| snapshot::validate(&r, &handle));
        let identity = Identity {
            task_id: ids.task_id(),
            owner: cmd.scope.owner,
            thread: cmd.scope.thread,
            server: cmd.server,
            name: cmd.name,
            handle: handle.clone(),
            created_at: now,
        };
        let task_id = identity.task_id.clone();
        let result = self
            .store
            .insert_task(new_row(identity, first, now, &self.policy))
            .await;
        match result {
            Ok(()) => {
                armed.disarm();
                Ok(task_id)
            }
            Err(StoreError::DuplicateHandle) => {
                armed.disarm();
                Err(SubmitError::Duplicate)
            }
            Err(e) => {
                // Still armed during the compensating cancel: dropped there, it is queued.
                let server = armed.server.clone();
                let cancelled = self.driver.cancel(&server, &handle).await;
                armed.disarm();
                if let Err(cancel_error) = cancelled {
                    tracing::warn!(error = %snapshot::storable(&cancel_error.to_string(), &handle), "compensating cancel failed; queued");
                    self.queue_compensation(server, handle, 1);
                }
                Err(SubmitError::Store(e))
            }
        }
    }

    fn queue_compensation(&self, server: ServerId, handle: RemoteHandle, attempts: u32) {
        let mut queue = self.compensations.lock().unwrap_or_else(|p| p.into_inner());
        queue.push(PendingCompensation {
            server,
            handle,
            attempts,
        });
    }

    /// Cancels remote tasks of submits that were dropped midway or whose compensating cancel
    /// failed; each is tried [`COMPENSATION_ATTEMPTS`] times in all. Returns how many succeeded.
    pub async fn compensate_pending(&self) -> usize {
        let pending =
            std::mem::take(&mut *self.compensations.lock().unwrap_or_else(|p| p.into_inner()));
        let mut done = 0;
        for p in pending {
            match self.driver.cancel(&p.server, &p.handle).await {
                Ok(_) => done += 1,
                Err(_) if p.attempts + 1 < COMPENSATION_ATTEMPTS => {
                    self.queue_compensation(p.server, p.handle, p.attempts + 1)
                }
                Err(_) => tracing::warn!(
                    "compensating cancel given up after {COMPENSATION_ATTEMPTS} attempts"
                ),
            }
        }
        done
    }

    /// Remote tasks still waiting for a compensating cancel.
    pub fn pending_compensations(&self) -> usize {
        self.compensations
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .len()
    }
}

fn check_request(cmd: &SubmitCommand) -> Result<(), SubmitError> {
    let fields = [
        ("owner", cmd.scope.owner.as_str()),
        ("thread", cmd.scope.thread.as_str()),
        ("server", cmd.server.as_str()),
        ("tool", cmd.tool.as_str()),
    ];
    for (field, value) in fields {
        if value.is_empty() || value.chars().count() > MAX_ID || value.contains('\0') {
            return Err(SubmitError::Invalid(format!(
                "{field} must be 1 to {MAX_ID} characters without NUL"
            )));
        }
    }
    if cmd.name.chars().count() > MAX_NAME || cmd.name.contains('\0') {
        return Err(SubmitError::Invalid(format!(
            "name must be at most {MAX_NAME} characters without NUL"
        )));
    }
    Ok(())
}
