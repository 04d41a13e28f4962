//! The storage contract: one method per atomic operation (DESIGN "core").
//!
//! Every method either commits entirely or not at all. Every write that depends on a claim is
//! guarded by that claim's lease (owner, fencing token, expiry against the `now` or completion
//! time passed in) and, for notifications, by the dispatch version; a lost guard is reported as
//! a typed [`Refusal`] per row, never as a silent success. Time is always a parameter: no store
//! reads a clock. A crash (of the caller or the store) before a call leaves the row as it was; a
//! crash after it leaves the call's effect; in both cases an unreleased lease simply expires —
//! there is no recovery sweep. A call whose reply is lost may or may not have committed; every
//! method is safe to follow by a re-claim.

use crate::event::Fingerprint;
use crate::ids::{OwnerId, ServerId, TaskId, ThreadId, WorkerId};
use crate::lease::{Lease, LeaseKind, Refusal};
use crate::secret::Secret;
use crate::status::{DeadLetterReason, NotifyStatus};
use crate::task::TaskRow;
use crate::time::Timestamp;
use crate::transitions::answer::AnswerAction;
use crate::transitions::cancel::CancelAction;
use crate::transitions::outbox::{NotifyAction, Recorded};
use crate::transitions::poll::PollUpdate;
use serde::{Deserialize, Serialize};
use std::future::Future;
use std::time::Duration;

/// Errors a store call can end with. Row-level guard failures are not errors: they are
/// [`Refusal`]s inside the per-row outcomes.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error, Serialize, Deserialize)]
pub enum StoreError {
    /// A task with this id exists.
    #[error("a task with this id already exists")]
    DuplicateTask,
    /// The same remote handle is already tracked for this owner and server.
    #[error("this remote task is already tracked")]
    DuplicateHandle,
    /// The input breaks a limit or a format rule.
    #[error("invalid input: {0}")]
    Invalid(String),
    /// The store could not be reached or the transaction did not complete; it may or may not
    /// have committed.
    #[error("store unavailable: {0}")]
    Unavailable(String),
}

/// Parameters of a batched claim.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct ClaimRequest {
    /// The claimer, recorded as the lease owner.
    pub worker: WorkerId,
    /// The claimer's current time.
    pub now: Timestamp,
    /// How long the leases last from `now`.
    pub lease_for: Duration,
    /// At most this many rows; at most [`crate::policy::MAX_BATCH`] (a larger limit is
    /// [`StoreError::Invalid`]).
    pub limit: usize,
}

/// The notification claim a poll write makes when it opens the channel
/// ([`Store::apply_polls_and_claim`]): the lease's owner and length, as in a [`ClaimRequest`].
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct HandOff {
    /// The claimer, recorded as the notification lease's owner.
    pub worker: WorkerId,
    /// The claimer's current time.
    pub now: Timestamp,
    /// How long the notification leases last from `now`.
    pub lease_for: Duration,
}

impl HandOff {
    /// The claim request the hand-off stands for (one row at a time).
    pub fn as_claim(&self) -> ClaimRequest {
        ClaimRequest {
            worker: self.worker.clone(),
            now: self.now,
            lease_for: self.lease_for,
            limit: 1,
        }
    }
}

/// A claimed row with the lease that guards writes about it.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct Claimed {
    /// The row as it is right after the claim (frozen snapshot included for notifications).
    pub row: TaskRow,
    /// The lease: present it with every write about this claim.
    pub lease: Lease,
}

/// A poll result to apply under a poll lease.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct PollWrite {
    /// The task.
    pub task_id: TaskId,
    /// The claim's lease.
    pub lease: Lease,
    /// When the remote call completed; the lease must have been unexpired then.
    pub completed_at: Timestamp,
    /// What the result changes.
    pub update: PollUpdate,
}

/// A notification step to apply under a notification lease.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct NotifyWrite {
    /// The task.
    pub task_id: TaskId,
    /// The claim's lease.
    pub lease: Lease,
    /// The dispatch version the claim froze.
    pub dispatch_version: u64,
    /// The step's outcome.
    pub action: NotifyAction,
}

/// A cancel step to apply under a cancel lease.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct CancelWrite {
    /// The task.
    pub task_id: TaskId,
    /// The claim's lease.
    pub lease: Lease,
    /// The step's outcome.
    pub action: CancelAction,
}

/// An answer outcome to apply under the poll lease whose claim marked the attempt.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct AnswerWrite {
    /// The task.
    pub task_id: TaskId,
    /// The poll claim's lease (its token is the attempt's).
    pub lease: Lease,
    /// The attempt's outcome.
    pub action: AnswerAction,
}

/// The user's answer to one input request of a task in the caller's scope.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct AnswerRequest {
    /// The task.
    pub task_id: TaskId,
    /// The request id, as the task's input request names it (`[id]`).
    pub request_id: String,
    /// The answer (secret-like: never formatted).
    #[serde(serialize_with = "crate::row_codec::secret")]
    pub text: Secret,
}

/// What recording an answer did.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub enum AnswerOutcome {
    /// Recorded; the next poll of the task sends it.
    Recorded(TaskId),
    /// This request was already answered; nothing changed.
    AlreadyAnswered(TaskId),
    /// Another answer of the task waits to be sent; nothing changed.
    AnotherPending(TaskId),
    /// The task does not ask for this request now; nothing changed.
    NotAsked(TaskId),
    /// No such task in the caller's scope (other owners' tasks are "not found" too).
    NotFound,
}

/// What a submit settles on its intent row ([`Store::settle_submit`], DOMAIN §7).
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub enum SubmitSettlement {
    /// The remote task started: its row as [`crate::transitions::submit::new_row`] builds it
    /// from the handle and the remote's first report. Its handle is recorded on the intent.
    Started(Box<TaskRow>),
    /// Nothing remote was started (the server refused the submit, or the submit gave up before
    /// the remote call): the intent row is deleted.
    Withdrawn,
}

/// What settling a submit did.
#[derive(Copy, Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub enum SubmitSettled {
    /// The handle was recorded: the task is tracked from now on.
    Recorded,
    /// The intent row was deleted.
    Withdrawn,
    /// The row no longer waits for its handle — its grace ran out and a loop ended it as
    /// untracked, or it is gone: nothing changed.
    NotAwaiting,
}

/// Gives a lease back without a result.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct Release {
    /// The task.
    pub task_id: TaskId,
    /// The claim's lease.
    pub lease: Lease,
    /// When the row is due again.
    pub retry_at: Timestamp,
    /// An unexpected error: counted as a failure (notify and cancel loops). `None` for the
    /// worker's own shutdown and for a lease too short to start an external call, which never
    /// count. (An unanswered run lookup is not a release: it is [`NotifyAction::LookupUnavailable`].)
    pub error: Option<String>,
}

/// The outbox right after a successful write: what the write left behind.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct Written {
    /// What recording an event did, for writes that record one.
    pub recorded: Option<Recorded>,
    /// `event_version` after the write.
    pub event_version: u64,
    /// `notified_version` after the write.
    pub notified_version: u64,
    /// Notification status after the write.
    pub notify_status: NotifyStatus,
    /// Fingerprint after the write.
    pub fingerprint: Option<Fingerprint>,
}

impl Written {
    /// The after-image of `row`'s outbox.
    pub fn of(row: &TaskRow, recorded: Option<Recorded>) -> Self {
        Written {
            recorded,
            event_version: row.outbox.event_version,
            notified_version: row.outbox.notified_version,
            notify_status: row.outbox.status,
            fingerprint: row.outbox.fingerprint.clone(),
        }
    }
}

/// One row's outcome in a batched write, in the order of the batch.
pub type WriteOutcome = Result<Written, Refusal>;

/// Whose tasks a user call may see or touch: the owner and the thread (DOMAIN §6).
#[derive(Clone, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
pub struct Scope {
    /// The calling user.
    pub owner: OwnerId,
    /// The calling conversation.
    pub thread: ThreadId,
}

/// In which order a listing returns a scope's tasks (and so which it returns when it stops at
/// its limit).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub enum ListOrder {
    /// Newest first: `created_at` descending, then task id ascending (the API's listing).
    Newest,
    /// Most recently updated first: `remote.updated_at` descending, then task id ascending (the
    /// per-run context projection, [`crate::text::context_projection`]).
    RecentlyUpdated,
}

/// Which finished rows to delete, and how many at most ([`Store::prune_finished`]).
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct PruneRequest {
    /// The caller's current time (a lease unexpired then keeps its row).
    pub now: Timestamp,
    /// Rows whose remote state last changed — and whose notification last settled — before
    /// this are due for deletion.
    pub finished_before: Timestamp,
    /// A dead-lettered notification keeps its row until it is requeued or dead-lettered before
    /// this (a separate, longer age: the operator must get to see it).
    pub dead_letters_before: Timestamp,
    /// At most this many tasks; at most [`crate::policy::MAX_BATCH`] (a larger limit is
    /// [`StoreError::Invalid`]).
    pub limit: usize,
}

/// Which polls to bring forward, and how ([`Store::poll_sooner`]).
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct PollSooner {
    /// Only this MCP server's tasks; every server's when `None`.
    pub server: Option<ServerId>,
    /// Only tasks whose last poll failed (backed off); every pollable task otherwise.
    pub backed_off_only: bool,
    /// The caller's current time (a poll lease unexpired then keeps its row out).
    pub now: Timestamp,
    /// The first selected task is due then, each next one `spacing` later; tasks already due by
    /// then are left out (a caller that pages on starts the next call where this one's spread
    /// ended).
    pub from: Timestamp,
    /// The gap between two brought-forward polls: the rate limit.
    pub spacing: Duration,
    /// At most this many tasks, earliest next poll first; at most
    /// [`crate::policy::MAX_BATCH`] (a larger limit is [`StoreError::Invalid`]).
    pub limit: usize,
}

/// What [`Store::poll_sooner`] did.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Serialize, Deserialize)]
pub struct PolledSooner {
    /// Tasks selected (at most the limit: fewer means there are no more).
    pub selected: u64,
    /// Of those, tasks whose next poll moved earlier.
    pub moved: u64,
}

/// What a prune deleted.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Serialize, Deserialize)]
pub struct Pruned {
    /// Task rows deleted.
    pub tasks: u64,
    /// Ended runs of those tasks deleted from a run ledger kept beside the rows (a store
    /// without one reports 0).
    pub runs: u64,
}

/// Which task a cancel request names.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub enum CancelTarget {
    /// By task id.
    Id(TaskId),
    /// By exact name, among the caller's active (non-terminal) tasks in the thread.
    Name(String),
}

/// What a cancel request did.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub enum CancelOutcome {
    /// The first request for this task: recorded.
    Requested(TaskId),
    /// Already requested: nothing changed.
    AlreadyRequested(TaskId),
    /// Already terminal: nothing to cancel.
    AlreadyFinished(TaskId),
    /// No such task in the caller's scope (other owners' tasks are "not found" too).
    NotFound,
    /// Several active tasks have that name; nothing changed.
    Ambiguous(usize),
}

/// Counts for operators.
#[derive(Clone, PartialEq, Eq, Debug, Default, Serialize, Deserialize)]
pub struct Overview {
    /// Tasks stored.
    pub tasks: u64,
    /// Tasks per notification status, in [`NotifyStatus::ALL`] order, zeros included.
    pub by_notify_status: Vec<(NotifyStatus, u64)>,
    /// Tasks whose last dead letter had this reason.
    pub dead_letters: Vec<(DeadLetterReason, u64)>,
    /// Tasks whose cancel was dead-lettered.
    pub cancel_dead_letters: u64,
    /// Tasks with undelivered work.
    pub undelivered: u64,
    /// Busy-thread (409) answers, all tasks.
    pub busy_total: u64,
}

/// Where task rows are kept. Implemented by `MemStore` (the executable specification) and by
/// the Postgres store; a conformance suite holds both to the same behaviour.
pub trait Store: Send + Sync {
    /// Inserts a new task row built by [`crate::transitions::submit::new_row`].
    /// Atomic; fails with [`StoreError::DuplicateHandle`] when (owner, server, remote task id)
    /// is already tracked, [`StoreError::DuplicateTask`] for a reused id, and
    /// [`StoreError::Invalid`] when a field breaks a limit of [`crate::policy`].
    fn insert_task(&self, row: TaskRow) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Settles a submit's intent row `task` ([`crate::transitions::submit`]): records the started
    /// task's handle and first report ([`crate::transitions::submit::record_handle`]), or
    /// deletes the intent. Changes nothing and answers [`SubmitSettled::NotAwaiting`] when the
    /// row no longer waits for its handle. Unguarded by any lease — one submit owns its intent —
    /// and idempotent, so it is safe to retry after an unavailable answer. Fails with
    /// [`StoreError::DuplicateHandle`] when another task of the owner on that server already
    /// tracks the handle — whether or not this row still waits, so a late handle of a remote
    /// task someone else follows is never taken for a stranger to cancel — and
    /// [`StoreError::Invalid`] when the started row breaks a limit.
    fn settle_submit(
        &self,
        task: &TaskId,
        settlement: SubmitSettlement,
        now: Timestamp,
    ) -> impl Future<Output = Result<SubmitSettled, StoreError>> + Send;

    /// Claims up to `limit` due rows for loop `kind`, ordered by due time then id, skipping rows
    /// another claimer holds (and rows locked by a concurrent claim). Each claimed row gets a
    /// fresh lease (owner, next fencing token, `now + lease_for`). A notification claim also
    /// freezes the snapshot ([`crate::transitions::outbox::claim`]); a poll claim also marks a
    /// pending answer as its attempt, or turns an earlier attempt without an outcome
    /// `unconfirmed` ([`crate::transitions::answer::on_poll_claim`]). Atomic for the batch: a
    /// crash after it leaves leases that simply expire. A `limit` above
    /// [`crate::policy::MAX_BATCH`] is [`StoreError::Invalid`] and claims nothing.
    fn claim(
        &self,
        kind: LeaseKind,
        req: ClaimRequest,
    ) -> impl Future<Output = Result<Vec<Claimed>, StoreError>> + Send;

    /// Applies poll results, each guarded by [`crate::transitions::guard::poll_apply`]: its own
    /// poll lease, unexpired at the remote call's completion, no cancel requested, not terminal.
    /// Each accepted row gets the new remote state and schedule, loses the lease, and records the
    /// event against its current outbox. Rows are independent; the batch is one transaction.
    fn apply_polls(
        &self,
        writes: Vec<PollWrite>,
        now: Timestamp,
    ) -> impl Future<Output = Result<Vec<WriteOutcome>, StoreError>> + Send;

    /// [`Store::apply_polls`], and in the same write the notification claim of every accepted
    /// row whose new event version opened the channel (nothing was in flight: the row became
    /// `pending`, due at `now`) and whose notification lease is free at `hand_off.now`: a
    /// fresh notification lease for `hand_off.worker` and the snapshot frozen, exactly as
    /// [`Store::claim`] of loop `Notify` would have done a moment later — one row version
    /// instead of two. Returns the outcomes in batch order (each row's outbox after both
    /// writes) and the rows so claimed, in batch order. Atomic for the batch.
    fn apply_polls_and_claim(
        &self,
        writes: Vec<PollWrite>,
        now: Timestamp,
        hand_off: HandOff,
    ) -> impl Future<Output = Result<(Vec<WriteOutcome>, Vec<Claimed>), StoreError>> + Send;

    /// Applies notification steps ([`crate::transitions::outbox::apply_action`]), each guarded
    /// by its notification lease at `now` and its dispatch version. Releases each lease.
    fn finish_notifications(
        &self,
        writes: Vec<NotifyWrite>,
        now: Timestamp,
    ) -> impl Future<Output = Result<Vec<WriteOutcome>, StoreError>> + Send;

    /// Applies cancel steps ([`crate::transitions::cancel::apply`]), each guarded by its cancel
    /// lease at `now`. Releases each lease.
    fn finish_cancels(
        &self,
        writes: Vec<CancelWrite>,
        now: Timestamp,
    ) -> impl Future<Output = Result<Vec<WriteOutcome>, StoreError>> + Send;

    /// Gives leases of loop `kind` back without a result (the phase is unchanged; the row is due
    /// at `retry_at`); each guarded by its lease at `now`. A release with an error counts a
    /// failure for the notify and cancel loops; poll releases never count.
    fn release(
        &self,
        kind: LeaseKind,
        releases: Vec<Release>,
        now: Timestamp,
    ) -> impl Future<Output = Result<Vec<WriteOutcome>, StoreError>> + Send;

    /// Records a cancel request in the caller's scope ([`crate::transitions::cancel::request`]).
    /// Atomic. Tasks of other owners or threads are [`CancelOutcome::NotFound`].
    fn request_cancel(
        &self,
        scope: &Scope,
        target: &CancelTarget,
        now: Timestamp,
    ) -> impl Future<Output = Result<CancelOutcome, StoreError>> + Send;

    /// Records the user's answer to an input request of a task in the caller's scope
    /// ([`crate::transitions::answer::record`], after
    /// [`crate::transitions::answer::validate`]: a malformed id or an answer over
    /// [`crate::policy::MAX_ANSWER_BYTES`] is [`StoreError::Invalid`]). Atomic. Tasks of other
    /// owners or threads are [`AnswerOutcome::NotFound`]. The answer is never logged or shown.
    fn record_answer(
        &self,
        scope: &Scope,
        answer: AnswerRequest,
        now: Timestamp,
    ) -> impl Future<Output = Result<AnswerOutcome, StoreError>> + Send;

    /// Applies answer outcomes ([`crate::transitions::answer::apply`]), each guarded by
    /// [`crate::transitions::guard::answer_write`] at `now`: the poll lease that marked the
    /// attempt. The poll lease stays held.
    fn finish_answers(
        &self,
        writes: Vec<AnswerWrite>,
        now: Timestamp,
    ) -> impl Future<Output = Result<Vec<WriteOutcome>, StoreError>> + Send;

    /// The caller's tasks in this thread in `order`, at most `limit` of them: the store reads
    /// no more rows than it returns. A `limit` above [`crate::policy::MAX_LIST`] is
    /// [`StoreError::Invalid`].
    fn list_tasks(
        &self,
        scope: &Scope,
        order: ListOrder,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<TaskRow>, StoreError>> + Send;

    /// One of the caller's tasks in this thread; `None` for any other task.
    fn get_task(
        &self,
        scope: &Scope,
        id: &TaskId,
    ) -> impl Future<Output = Result<Option<TaskRow>, StoreError>> + Send;

    /// Operator view: all rows after `after` in id order, at most `limit`. Unscoped.
    fn admin_rows(
        &self,
        after: Option<TaskId>,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<TaskRow>, StoreError>> + Send;

    /// Operator view: counts.
    fn overview(&self) -> impl Future<Output = Result<Overview, StoreError>> + Send;

    /// Operator action, unscoped: requeues task `id`'s dead-lettered notification
    /// ([`crate::transitions::outbox::requeue`]): its latest event is delivered again as a new
    /// version with a fresh budget. Atomic per row; any other row is left untouched.
    fn requeue_dead_letter(
        &self,
        id: &TaskId,
        now: Timestamp,
    ) -> impl Future<Output = Result<RequeueOutcome, StoreError>> + Send;

    /// Brings polls forward ([`crate::transitions::poll_sooner`]), unscoped: up to `req.limit`
    /// tasks [`crate::transitions::poll_sooner::selects`] at `req`, in (next poll, id) order,
    /// the k-th due no later than `req.from + k × req.spacing`; nothing else changes. Atomic per
    /// call. A `limit` above [`crate::policy::MAX_BATCH`] is [`StoreError::Invalid`] and moves
    /// nothing.
    fn poll_sooner(
        &self,
        req: PollSooner,
    ) -> impl Future<Output = Result<PolledSooner, StoreError>> + Send;

    /// Operator action, unscoped: requeues task `id`'s cancel dead letter
    /// ([`crate::transitions::cancel::requeue`]): the remote cancel is requested again, due
    /// now, with a fresh budget. Atomic per row; any other row is left untouched.
    fn requeue_cancel_dead_letter(
        &self,
        id: &TaskId,
        now: Timestamp,
    ) -> impl Future<Output = Result<CancelRequeueOutcome, StoreError>> + Send;

    /// Retention, unscoped: deletes up to `req.limit` rows that
    /// [`crate::transitions::retention::prunable`] allows at `req.now` for
    /// `req.finished_before` (terminal, every event settled, no dispatch in flight, no cancel
    /// to do, no lease held), oldest remote update first, skipping rows a concurrent call holds;
    /// with them, their ended runs in a run ledger kept beside the rows. Atomic per call; a
    /// caller deletes more by calling again until fewer than `limit` went. A `limit` above
    /// [`crate::policy::MAX_BATCH`] is [`StoreError::Invalid`] and deletes nothing.
    fn prune_finished(
        &self,
        req: PruneRequest,
    ) -> impl Future<Output = Result<Pruned, StoreError>> + Send;

    /// The store's own clock, read now: the one clock every worker's leases are compared
    /// against in effect, so the engine measures its own clock's skew from it before it claims
    /// ([`crate::policy::Policy::max_clock_skew`]). `Ok(None)` means this store keeps no clock
    /// (the in-memory store, whose caller's clock is the only one): there is nothing to compare
    /// and no claim is refused for skew. Reads nothing else and writes nothing.
    fn store_time(&self) -> impl Future<Output = Result<Option<Timestamp>, StoreError>> + Send {
        std::future::ready(Ok(None))
    }
}

/// What an operator's requeue of a cancel dead letter did.
#[derive(Copy, Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub enum CancelRequeueOutcome {
    /// Requeued: the remote cancel is due again, with a fresh budget.
    Requeued,
    /// The task's cancel work is not dead-lettered: nothing changed.
    NotDeadLettered,
    /// The task is terminal, so there is nothing left to cancel: nothing changed.
    AlreadyFinished,
    /// No such task.
    NotFound,
}

/// What an operator's requeue did.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub enum RequeueOutcome {
    /// Requeued: the latest event is due again as this version.
    Requeued(u64),
    /// The task's notification is not dead-lettered: nothing changed.
    NotDeadLettered,
    /// Dead-lettered, but the latest state says nothing worth notifying: nothing changed.
    NothingToDeliver,
    /// No such task.
    NotFound,
}
