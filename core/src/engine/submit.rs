//! Submit with compensation (DOMAIN §7): call the driver, then persist the handle before
//! returning. A store answer of "unavailable" is ambiguous (the insert may have committed), so
//! it is resolved before anything is compensated: the same row is inserted again, and a
//! duplicate-task answer means the first insert committed. Only an insert the store definitely
//! refused is compensated by cancelling the remote task (best effort), keeping the original
//! error. An insert still unresolved after [`INSERT_ATTEMPTS`], or a submit future dropped
//! midway, leaves the row queued: later passes insert it again until the store answers, and
//! never cancel a remote task whose row may exist. A duplicate remote handle is rejected
//! without cancelling the task that already has it.
use super::{Engine, PendingCompensation, COMPENSATION_ATTEMPTS};
use crate::identity::Identity;
use crate::ids::{IdSource, ServerId, TaskId};
use crate::mutation::{self, Mutant};
use crate::policy::{bounded, MAX_ID, MAX_NAME, MAX_SHOWN_ERROR};
use crate::ports::{Clock, Driver, Launcher, SubmitRequest};
use crate::secret::RemoteHandle;
use crate::snapshot;
use crate::store::{Scope, Store, StoreError};
use crate::task::TaskRow;
use crate::transitions::submit::new_row;
use std::sync::Mutex;

/// Inserts of one row within a submit call before its outcome is declared unconfirmed.
pub const INSERT_ATTEMPTS: u32 = 3;

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
    /// The remote task was started but the store never confirmed whether its row was saved.
    /// The row is kept and inserted again by later passes (never cancelled blind): once saved,
    /// the task is tracked and its notifications reach the caller's thread. Resubmitting would
    /// start a second remote task.
    #[error("the task was started but saving it was not confirmed ({0}); it is saved and reported in this thread once the store answers, so do not submit it again")]
    Unconfirmed(StoreError),
}

/// What the store's answers say about one row's insert.
enum Insert {
    /// The row is stored (inserted now, or found already there).
    Stored,
    /// Another task already tracks this remote handle; nothing of ours was stored.
    Duplicate,
    /// Definitely not stored.
    Refused(StoreError),
    /// Still unknown.
    Unknown(StoreError),
}

/// Queues the submit's unsettled remote task when dropped while armed: with its row while the
/// insert's outcome is open (a later pass inserts it again), without once the store definitely
/// refused it (a later pass cancels the remote task).
struct Armed<'a> {
    queue: &'a Mutex<Vec<PendingCompensation>>,
    task: TaskId,
    server: ServerId,
    handle: Option<RemoteHandle>,
    row: Option<TaskRow>,
}

impl Armed<'_> {
    fn disarm(mut self) {
        self.handle = None;
    }

    /// The store definitely refused the row: from now on only a cancel is owed.
    fn refused(&mut self) {
        self.row = None;
    }
}

impl Drop for Armed<'_> {
    fn drop(&mut self) {
        if let Some(handle) = self.handle.take() {
            let mut queue = self.queue.lock().unwrap_or_else(|p| p.into_inner());
            queue.push(PendingCompensation {
                task: self.task.clone(),
                server: self.server.clone(),
                handle,
                row: self.row.take(),
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
        let handle = submitted.handle;
        if handle.remote_task_id.expose().trim().is_empty() {
            // Nothing could ever reach that task again (not even a compensating cancel).
            return Err(SubmitError::Remote(
                "the remote server answered with a blank task id".into(),
            ));
        }
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
        let row = new_row(identity, first, now, &self.policy);
        let mut armed = Armed {
            queue: &self.compensations,
            task: task_id.clone(),
            server: row.identity.server.clone(),
            handle: Some(handle.clone()),
            row: Some(row.clone()),
        };
        let mut outcome = match self.store.insert_task(row.clone()).await {
            Ok(()) => Insert::Stored,
            // The first try cannot have met our own row: the handle is someone else's.
            Err(StoreError::DuplicateHandle) => Insert::Duplicate,
            Err(e @ StoreError::Unavailable(_))
                if !mutation::active(Mutant::UnconfirmedInsertCompensated) =>
            {
                Insert::Unknown(e)
            }
            Err(e) => Insert::Refused(e),
        };
        for _ in 1..INSERT_ATTEMPTS {
            let Insert::Unknown(_) = &outcome else { break };
            outcome = self.insert_again(&row).await;
        }
        match outcome {
            Insert::Stored => {
                armed.disarm();
                Ok(task_id)
            }
            Insert::Duplicate => {
                armed.disarm();
                Err(SubmitError::Duplicate)
            }
            Insert::Unknown(e) => {
                // Dropped here, the armed guard queues the row to be inserted again.
                drop(armed);
                tracing::warn!(task = %task_id, error = %e, "insert unconfirmed; queued to be inserted again");
                Err(SubmitError::Unconfirmed(e))
            }
            Insert::Refused(e) => {
                armed.refused();
                // Still armed during the compensating cancel: dropped there, it is queued.
                let server = armed.server.clone();
                if mutation::active(Mutant::CompensationSkipped) {
                    armed.disarm();
                    return Err(SubmitError::Store(e));
                }
                let cancelled = self.driver.cancel(&server, &handle).await;
                armed.disarm();
                if let Err(cancel_error) = cancelled {
                    tracing::warn!(task = %task_id, error = %snapshot::storable(&cancel_error.to_string(), &handle), "compensating cancel failed; queued");
                    self.queue_compensation(PendingCompensation {
                        task: task_id,
                        server,
                        handle,
                        row: None,
                        attempts: 1,
                    });
                }
                Err(SubmitError::Store(e))
            }
        }
    }

    /// Inserts `row` again after an answer that left its first insert's outcome open: a
    /// duplicate-task answer means an earlier insert committed, and a duplicate-handle answer
    /// is ours when the row can be read back.
    async fn insert_again(&self, row: &TaskRow) -> Insert {
        match self.store.insert_task(row.clone()).await {
            Ok(()) | Err(StoreError::DuplicateTask) => Insert::Stored,
            Err(StoreError::DuplicateHandle) => {
                let scope = Scope {
                    owner: row.identity.owner.clone(),
                    thread: row.identity.thread.clone(),
                };
                match self.store.get_task(&scope, row.id()).await {
                    Ok(Some(_)) => Insert::Stored,
                    Ok(None) => Insert::Duplicate,
                    Err(e) => Insert::Unknown(e),
                }
            }
            Err(e @ StoreError::Unavailable(_)) => Insert::Unknown(e),
            Err(e) => Insert::Refused(e),
        }
    }

    fn queue_compensation(&self, pending: PendingCompensation) {
        let mut queue = self.compensations.lock().unwrap_or_else(|p| p.into_inner());
        queue.push(pending);
    }

    /// Settles submits that did not: a row whose insert was never confirmed is inserted again
    /// (stored: done; definitely refused: its remote task is cancelled; still unknown: kept),
    /// and a remote task whose row was refused is cancelled. Each entry is tried
    /// [`COMPENSATION_ATTEMPTS`] times in all, then given up with a warning — an unconfirmed
    /// row is never given up by cancelling its remote task. Returns how many remote tasks were
    /// cancelled.
    pub async fn compensate_pending(&self) -> usize {
        let pending =
            std::mem::take(&mut *self.compensations.lock().unwrap_or_else(|p| p.into_inner()));
        let mut cancelled = 0;
        for mut p in pending {
            let again = p.attempts + 1 < COMPENSATION_ATTEMPTS;
            p.attempts += 1;
            if let Some(row) = p.row.take() {
                match self.insert_again(&row).await {
                    Insert::Stored => {
                        tracing::info!(task = %p.task, "unconfirmed insert saved after all")
                    }
                    Insert::Duplicate => {}
                    Insert::Refused(e) => {
                        tracing::warn!(task = %p.task, error = %e, "unconfirmed insert refused; its remote task is cancelled");
                        self.queue_compensation(p);
                    }
                    Insert::Unknown(_) if again => {
                        p.row = Some(row);
                        self.queue_compensation(p);
                    }
                    Insert::Unknown(e) => tracing::warn!(
                        task = %p.task, error = %e,
                        "insert still unconfirmed after {COMPENSATION_ATTEMPTS} attempts; given up, its remote task left running"
                    ),
                }
                continue;
            }
            match self.driver.cancel(&p.server, &p.handle).await {
                Ok(_) => cancelled += 1,
                Err(_) if again => self.queue_compensation(p),
                Err(_) => tracing::warn!(
                    task = %p.task,
                    "compensating cancel given up after {COMPENSATION_ATTEMPTS} attempts"
                ),
            }
        }
        cancelled
    }

    /// Submits still unsettled: rows to insert again and remote tasks to cancel.
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
