//! Submit (DOMAIN §7): the intent first, then the remote call, then the handle.
//!
//! 1. The task's row is stored before anything remote happens, as an intent
//!    ([`crate::transitions::submit::new_intent`]). If the store cannot confirm it, nothing is
//!    started and the caller may submit again ([`SubmitError::NotStarted`]).
//! 2. The driver starts the remote task. A refusal withdraws the intent.
//! 3. The handle and the first report are recorded on the intent
//!    ([`crate::store::Store::settle_submit`]). An "unavailable" answer is ambiguous, so the
//!    write is retried ([`WRITE_ATTEMPTS`] in the call); still unconfirmed, the caller is told
//!    not to submit again ([`SubmitError::Unconfirmed`]) and the engine keeps the handle and
//!    records it on a backoff until the store answers ([`super::owed`]), across any outage.
//!    If the worker dies before that, the intent's grace runs out and a loop ends the task as
//!    untracked, telling the thread — never silence.
//!
//! Only a handle the store definitely refused has its remote task cancelled (the
//! compensation, best effort), and the original error is kept. A duplicate remote handle is
//! rejected without cancelling the task that already has it. A submit future dropped midway
//! owes what its step left: before the remote call, the intent's withdrawal; during it,
//! nothing (the grace tells the thread); after it, the handle.

use super::owed::Owed;
use super::Engine;
use crate::identity::Identity;
use crate::ids::{IdSource, ServerId, TaskId};
use crate::mutation::{self, planted, Mutant};
use crate::policy::{bounded, MAX_ID, MAX_NAME, MAX_SHOWN_ERROR};
use crate::ports::{Clock, Driver, Launcher, SubmitRequest, Submitted};
use crate::secret::RemoteHandle;
use crate::snapshot;
use crate::store::{Scope, Store, StoreError, SubmitSettled, SubmitSettlement};
use crate::task::TaskRow;
use crate::transitions::submit::{new_intent, new_row};

/// Store writes of one submit (the intent, then the handle) tried within the call before the
/// outcome is declared unknown.
pub const WRITE_ATTEMPTS: u32 = 3;

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
    /// The request breaks a limit; nothing was started.
    #[error("invalid request: {0}")]
    Invalid(String),
    /// Nothing was started (the store did not confirm the task's intent, or too many submits
    /// wait for the store): submitting again is safe.
    #[error("the task was not started: {0}")]
    NotStarted(String),
    /// The remote server did not accept the task.
    #[error("the remote server did not accept the task: {0}")]
    Remote(String),
    /// The remote server returned a handle that is already tracked; the existing task is untouched.
    #[error("the remote server returned a task that is already tracked")]
    Duplicate,
    /// The remote task started but the store refused to record it: it was cancelled again
    /// (best effort).
    #[error("the task could not be saved: {0}")]
    Store(StoreError),
    /// The remote task was started but the store never confirmed whether its handle was saved.
    /// The engine keeps the handle and records it once the store answers: the task is then
    /// tracked and its notifications reach the caller's thread. Resubmitting would start a
    /// second remote task.
    #[error("the task was started but saving it was not confirmed ({0}); it is saved and reported in this thread once the store answers, so do not submit it again")]
    Unconfirmed(StoreError),
}

/// Where a submit is, for what a dropped submit future owes.
enum Step {
    /// The intent is being stored, or is stored; the remote call has not started.
    BeforeCall,
    /// The remote call is under way: its outcome is unknown.
    Calling,
    /// The remote task started: this is its row.
    Started(Box<TaskRow>),
    /// The started task (this row) is being cancelled because nobody will track it, and its
    /// intent withdrawn when `withdraw` says so.
    Compensating {
        started: Box<TaskRow>,
        withdraw: bool,
    },
    /// Settled: nothing is owed.
    Settled,
}

/// Owes, when dropped unsettled, what the submit's step leaves owed.
struct Armed<'a, S: Store, D: Driver, L: Launcher, C: Clock> {
    engine: &'a Engine<S, D, L, C>,
    task: TaskId,
    step: Step,
}

impl<S: Store, D: Driver, L: Launcher, C: Clock> Drop for Armed<'_, S, D, L, C> {
    fn drop(&mut self) {
        match std::mem::replace(&mut self.step, Step::Settled) {
            Step::BeforeCall => self.engine.owe(&self.task, Owed::Withdrawal),
            Step::Started(row) => self.engine.owe(&self.task, Owed::Handle(row)),
            Step::Compensating { started, withdraw } => {
                self.engine.owe(&self.task, cancel_of(&started));
                if withdraw {
                    self.engine.owe(&self.task, Owed::Withdrawal);
                }
            }
            Step::Calling | Step::Settled => {}
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
        if !self.may_owe_more() {
            return Err(SubmitError::NotStarted(
                "too many earlier submits are waiting for the task store".into(),
            ));
        }
        let now = self.clock.now();
        let identity = Identity {
            task_id: ids.task_id(),
            owner: cmd.scope.owner.clone(),
            thread: cmd.scope.thread,
            server: cmd.server.clone(),
            name: cmd.name.clone(),
            handle: RemoteHandle::unrecorded(),
            created_at: now,
        };
        let intent = new_intent(identity, now, &self.policy);
        let mut armed = Armed {
            engine: self,
            task: intent.id().clone(),
            step: Step::BeforeCall,
        };
        if let Err(e) = self.store_intent(&intent).await {
            armed.step = Step::Settled;
            return Err(e);
        }
        armed.step = Step::Calling;
        let req = SubmitRequest {
            server: cmd.server,
            owner: cmd.scope.owner,
            name: cmd.name,
            tool: cmd.tool,
            arguments: cmd.arguments,
        };
        let started = match self.start_remote(&req, &intent).await {
            Ok(started) => started,
            Err(e) => {
                armed.step = Step::Settled;
                self.withdraw(intent.id()).await;
                return Err(e);
            }
        };
        armed.step = Step::Started(started.clone());
        self.record(&mut armed, started).await
    }

    /// Stores the intent row, inserting it again while the store's answer leaves its outcome
    /// open; an intent still unconfirmed is owed a withdrawal and nothing is started.
    async fn store_intent(&self, intent: &TaskRow) -> Result<(), SubmitError> {
        let mut last = None;
        for _ in 0..WRITE_ATTEMPTS {
            match self.store.insert_task(intent.clone()).await {
                Ok(()) => return Ok(()),
                // Only our own earlier try can have stored this fresh id.
                Err(StoreError::DuplicateTask) if last.is_some() => return Ok(()),
                Err(StoreError::Unavailable(e)) => last = Some(e),
                Err(StoreError::Invalid(e)) => return Err(SubmitError::Invalid(e)),
                Err(e) => return Err(SubmitError::NotStarted(e.to_string())),
            }
        }
        self.owe(intent.id(), Owed::Withdrawal);
        let e = last.unwrap_or_default();
        tracing::warn!(task = %intent.id(), error = %e, "submit intent unconfirmed; nothing started, the intent is withdrawn once the store answers");
        Err(SubmitError::NotStarted(format!(
            "the task store is unavailable: {e}"
        )))
    }

    /// Calls the driver and builds the started task's row from the handle and first report.
    async fn start_remote(
        &self,
        req: &SubmitRequest,
        intent: &TaskRow,
    ) -> Result<Box<TaskRow>, SubmitError> {
        let Submitted { handle, report } = self
            .driver
            .submit(req)
            .await
            .map_err(|e| SubmitError::Remote(bounded(&e.to_string(), MAX_SHOWN_ERROR)))?;
        if handle.remote_task_id.expose().trim().is_empty() {
            // Nothing could ever reach that task again (not even a compensating cancel).
            return Err(SubmitError::Remote(
                "the remote server answered with a blank task id".into(),
            ));
        }
        let first = report.map(|r| snapshot::validate(&r, &handle));
        let identity = Identity {
            handle,
            ..intent.identity.clone()
        };
        let now = self.clock.now();
        Ok(Box::new(new_row(identity, first, now, &self.policy)))
    }

    /// Deletes an intent nothing was started for; owed when the store does not answer.
    async fn withdraw(&self, task: &TaskId) {
        let settled = self
            .store
            .settle_submit(task, SubmitSettlement::Withdrawn, self.clock.now())
            .await;
        if let Err(StoreError::Unavailable(_)) = settled {
            self.owe(task, Owed::Withdrawal);
        }
    }
}

/// What the store's answers say about a handle write.
pub(crate) enum HandleWrite {
    Recorded,
    /// The intent no longer waits (its grace ran out): the remote task must go.
    TooLate,
    Duplicate,
    Refused(StoreError),
    Unknown(StoreError),
}

impl<S: Store, D: Driver, L: Launcher, C: Clock> Engine<S, D, L, C> {
    /// Records the started task's handle, settling `armed` with the outcome.
    async fn record(
        &self,
        armed: &mut Armed<'_, S, D, L, C>,
        started: Box<TaskRow>,
    ) -> Result<TaskId, SubmitError> {
        let task = armed.task.clone();
        let mut outcome = HandleWrite::Unknown(StoreError::Unavailable(String::new()));
        for _ in 0..WRITE_ATTEMPTS {
            outcome = self.write_handle(&task, &started).await;
            if !matches!(outcome, HandleWrite::Unknown(_)) {
                break;
            }
        }
        if let HandleWrite::Unknown(e) = &outcome {
            // Left armed with the started row: dropped, it owes the handle.
            tracing::warn!(task = %task, error = %e, "submit's handle unconfirmed; kept and saved once the store answers");
            return Err(SubmitError::Unconfirmed(e.clone()));
        }
        let result = match outcome {
            HandleWrite::Recorded => Ok(task.clone()),
            HandleWrite::Duplicate => {
                armed.step = Step::BeforeCall;
                self.withdraw(&task).await;
                Err(SubmitError::Duplicate)
            }
            HandleWrite::TooLate => {
                armed.step = Step::Compensating {
                    started: started.clone(),
                    withdraw: false,
                };
                self.compensate(&task, &started).await;
                Err(SubmitError::Store(StoreError::Unavailable(
                    "the task's intent ended before its handle was saved".into(),
                )))
            }
            HandleWrite::Refused(e) | HandleWrite::Unknown(e) => {
                armed.step = Step::Compensating {
                    started: started.clone(),
                    withdraw: true,
                };
                self.compensate(&task, &started).await;
                self.withdraw(&task).await;
                Err(SubmitError::Store(e))
            }
        };
        armed.step = Step::Settled;
        result
    }

    async fn write_handle(&self, task: &TaskId, started: &TaskRow) -> HandleWrite {
        let settlement = SubmitSettlement::Started(Box::new(started.clone()));
        let answer = self
            .store
            .settle_submit(task, settlement, self.clock.now())
            .await;
        let write = match answer {
            Ok(SubmitSettled::Recorded) => HandleWrite::Recorded,
            Ok(SubmitSettled::Withdrawn | SubmitSettled::NotAwaiting) => HandleWrite::TooLate,
            Err(StoreError::DuplicateHandle) => HandleWrite::Duplicate,
            Err(e @ StoreError::Unavailable(_)) => HandleWrite::Unknown(e),
            Err(e) => HandleWrite::Refused(e),
        };
        mutation::substitute(
            Mutant::UnconfirmedInsertCompensated,
            write,
            planted::unknown_as_refused,
        )
    }

    /// Cancels a started remote task nobody will track (best effort; owed on failure).
    async fn compensate(&self, task: &TaskId, started: &TaskRow) {
        let owed = Some((&started.identity.server, &started.identity.handle));
        let owed = mutation::substitute(Mutant::CompensationSkipped, owed, |_| None);
        if let Some((server, handle)) = owed {
            if let Err(e) = self.driver.cancel(server, handle).await {
                let error = snapshot::storable(&e.to_string(), handle);
                tracing::warn!(task = %task, error = %error, "compensating cancel failed; queued");
                self.owe(task, cancel_of(started));
            }
        }
    }
}

/// The compensating cancel of the started task `started`.
fn cancel_of(started: &TaskRow) -> Owed {
    Owed::Cancel {
        server: started.identity.server.clone(),
        handle: started.identity.handle.clone(),
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
