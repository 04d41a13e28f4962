//! What a submit still owes after it answered its caller (DOMAIN §7): a handle to record, an
//! intent to withdraw, a remote task to cancel. Kept in the engine that ran the submit and
//! settled by each of its passes ([`Engine::settle_submits`]), each entry on a backoff of its
//! own.
//!
//! Store writes are owed until the store answers: a recorded handle is the only way an
//! acknowledged submit is tracked, so it is never given up while the process lives (if it
//! dies, the intent's grace runs out and the thread is told the task could not be tracked). A
//! compensating cancel is best effort: tried [`CANCEL_ATTEMPTS`] times. A handle the store
//! refuses for good (not unavailable) is cancelled remotely and its intent kept: the submit was
//! acknowledged, so the intent's grace ends it as untracked and the thread is told.

use super::Engine;
use crate::ids::{ServerId, TaskId};
use crate::mutation::{self, planted, Mutant};
use crate::policy::{Policy, MAX_PENDING_SUBMITS, SUBMIT_RETRY_BASE, SUBMIT_RETRY_CAP};
use crate::ports::{Clock, Driver, Launcher};
use crate::secret::RemoteHandle;
use crate::store::{Store, StoreError, SubmitSettled, SubmitSettlement};
use crate::task::TaskRow;
use crate::time::Timestamp;

/// Compensating cancels of one remote task are tried this many times, then given up.
pub const CANCEL_ATTEMPTS: u32 = 3;

/// One thing a submit owes.
pub(crate) enum Owed {
    /// The remote task started; its handle (with the first report: the row as
    /// [`crate::transitions::submit::new_row`] builds it) is not recorded yet.
    Handle(Box<TaskRow>),
    /// Nothing remote was started, but the intent row may exist: it is deleted.
    Withdrawal,
    /// A started remote task nobody will track: cancelled, best effort.
    Cancel {
        /// Its server.
        server: ServerId,
        /// Its handle.
        handle: RemoteHandle,
    },
}

impl Owed {
    fn as_str(&self) -> &'static str {
        match self {
            Owed::Handle(_) => "handle",
            Owed::Withdrawal => "withdrawal",
            Owed::Cancel { .. } => "cancel",
        }
    }
}

/// An owed item of task `task`, due at `due_at` after `attempts` tries.
pub(super) struct PendingSubmit {
    pub(super) task: TaskId,
    pub(super) owed: Owed,
    pub(super) attempts: u32,
    pub(super) due_at: Timestamp,
}

/// What one settling pass did.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct SubmitsSettled {
    /// Handles recorded: acknowledged submits now tracked.
    pub recorded: usize,
    /// Intents withdrawn.
    pub withdrawn: usize,
    /// Remote tasks cancelled as compensation.
    pub cancelled: usize,
    /// Items still owed after the pass.
    pub still_owed: usize,
}

/// The wait before retry number `attempts` (1-based) of an owed item.
fn retry_delay(attempts: u32) -> std::time::Duration {
    Policy::backoff(
        SUBMIT_RETRY_BASE,
        attempts.saturating_sub(1),
        SUBMIT_RETRY_CAP,
    )
}

impl<S: Store, D: Driver, L: Launcher, C: Clock> Engine<S, D, L, C> {
    /// Queues `owed` for task `task`, due at once.
    pub(super) fn owe(&self, task: &TaskId, owed: Owed) {
        let mut queue = self.owed.lock().unwrap_or_else(|p| p.into_inner());
        queue.push(PendingSubmit {
            task: task.clone(),
            owed,
            attempts: 0,
            due_at: self.clock.now(),
        });
    }

    /// Whether another submit may start: the queue of owed items is below
    /// [`MAX_PENDING_SUBMITS`].
    pub(super) fn may_owe_more(&self) -> bool {
        self.pending_submits() < MAX_PENDING_SUBMITS
    }

    /// Items submits still owe: handles to record, intents to withdraw, cancels to send.
    pub fn pending_submits(&self) -> usize {
        self.owed.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// Settles what submits owe and is due: records handles, withdraws intents, cancels remote
    /// tasks nobody will track. Store writes that fail as unavailable are retried on a backoff
    /// (doubling from [`SUBMIT_RETRY_BASE`] to [`SUBMIT_RETRY_CAP`]) for as long as the engine
    /// lives; cancels are tried [`CANCEL_ATTEMPTS`] times. Holds no lease, so it runs whatever
    /// the clocks say.
    pub async fn settle_submits(&self) -> SubmitsSettled {
        let now = self.clock.now();
        let due: Vec<PendingSubmit> = {
            let mut queue = self.owed.lock().unwrap_or_else(|p| p.into_inner());
            let (due, later) = std::mem::take(&mut *queue)
                .into_iter()
                .partition(|p| p.due_at <= now);
            *queue = later;
            due
        };
        let mut done = SubmitsSettled::default();
        for p in due {
            self.settle_one(p, &mut done).await;
        }
        done.still_owed = self.pending_submits();
        done
    }

    /// Settles everything submits owe now, due or not (a worker's last chance before it
    /// exits): each item is tried once more and, if still owed, kept.
    pub async fn settle_all_submits(&self) -> SubmitsSettled {
        let now = self.clock.now();
        for p in self
            .owed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter_mut()
        {
            p.due_at = p.due_at.min(now);
        }
        self.settle_submits().await
    }

    async fn settle_one(&self, mut p: PendingSubmit, done: &mut SubmitsSettled) {
        p.attempts += 1;
        let kind = p.owed.as_str();
        let retry = match p.owed {
            Owed::Handle(started) => self.settle_handle(&p.task, started, done).await,
            Owed::Withdrawal => self.settle_withdrawal(&p.task, done).await,
            Owed::Cancel { server, handle } => {
                self.settle_cancel(&p.task, server, handle, p.attempts, done)
                    .await
            }
        };
        let retry = mutation::substitute(Mutant::OwedHandleGivenUp, retry, |retry| {
            planted::handle_given_up(retry, p.attempts)
        });
        let Some(owed) = retry else { return };
        tracing::debug!(task = %p.task, owed = kind, attempts = p.attempts, "still owed; retried later");
        let due_at = self.clock.now().plus(retry_delay(p.attempts));
        let mut queue = self.owed.lock().unwrap_or_else(|p| p.into_inner());
        queue.push(PendingSubmit { owed, due_at, ..p });
    }

    /// Records a started task's handle. Returns what is still owed.
    async fn settle_handle(
        &self,
        task: &TaskId,
        started: Box<TaskRow>,
        done: &mut SubmitsSettled,
    ) -> Option<Owed> {
        let settled = self
            .store
            .settle_submit(
                task,
                SubmitSettlement::Started(started.clone()),
                self.clock.now(),
            )
            .await;
        match settled {
            Ok(SubmitSettled::Recorded) => {
                tracing::info!(task = %task, "the submit's handle was saved after all: the task is tracked");
                done.recorded += 1;
                None
            }
            Ok(SubmitSettled::Withdrawn | SubmitSettled::NotAwaiting) => {
                tracing::warn!(task = %task, "the submit's handle came too late: the task was already reported as not tracked; its remote task is cancelled");
                self.queue_cancel(task, &started);
                None
            }
            Err(StoreError::Unavailable(_)) => Some(Owed::Handle(started)),
            Err(StoreError::DuplicateHandle) => {
                // Another row tracks this remote task (a server that hands one task to two
                // submits): it is not cancelled; this intent is withdrawn.
                tracing::warn!(task = %task, "the submit's remote task is already tracked by another row; its intent is withdrawn");
                Some(Owed::Withdrawal)
            }
            Err(e) => {
                // The caller was told the task is saved: the intent stays, so its grace ends
                // it as untracked and the thread is told (never silence).
                tracing::warn!(task = %task, error = %e, "the submit's handle was refused; its remote task is cancelled and the thread is told it could not be tracked");
                self.queue_cancel(task, &started);
                None
            }
        }
    }

    fn queue_cancel(&self, task: &TaskId, started: &TaskRow) {
        self.owe(
            task,
            Owed::Cancel {
                server: started.identity.server.clone(),
                handle: started.identity.handle.clone(),
            },
        );
    }

    /// Withdraws an intent nothing was started for. Returns what is still owed.
    async fn settle_withdrawal(&self, task: &TaskId, done: &mut SubmitsSettled) -> Option<Owed> {
        let settled = self
            .store
            .settle_submit(task, SubmitSettlement::Withdrawn, self.clock.now())
            .await;
        match settled {
            Ok(SubmitSettled::Withdrawn) => {
                done.withdrawn += 1;
                None
            }
            Ok(_) => None,
            Err(StoreError::Unavailable(_)) => Some(Owed::Withdrawal),
            Err(e) => {
                tracing::warn!(task = %task, error = %e, "withdrawing a submit's intent was refused");
                None
            }
        }
    }

    /// Cancels a remote task nobody will track. Returns what is still owed.
    async fn settle_cancel(
        &self,
        task: &TaskId,
        server: ServerId,
        handle: RemoteHandle,
        attempts: u32,
        done: &mut SubmitsSettled,
    ) -> Option<Owed> {
        match self.driver.cancel(&server, &handle).await {
            Ok(_) => {
                done.cancelled += 1;
                None
            }
            Err(_) if attempts < CANCEL_ATTEMPTS => Some(Owed::Cancel { server, handle }),
            Err(_) => {
                tracing::warn!(task = %task, "compensating cancel given up after {CANCEL_ATTEMPTS} attempts");
                None
            }
        }
    }
}
