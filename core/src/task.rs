//! The task row: the single source of truth, grouped by concern (DESIGN "core").
//!
//! One row per task holds its identity, the last observed remote state, the poll schedule and
//! lease, the notification outbox (the version pair) and the cancel work with its own lease.
//! The parts an event is built from live below this module ([`crate::identity`],
//! [`crate::remote`]) and are re-exported here, so the whole row reads from one place.

use crate::event::{Event, Fingerprint};
use crate::ids::{RunId, TaskId};
use crate::lease::{Lease, LeaseKind, LeaseToken};
use crate::secret::Secret;
use crate::status::{AnswerStatus, CancelStatus, DeadLetterReason, NotifyStatus};
use crate::time::Timestamp;
use serde::{Deserialize, Serialize};

pub use crate::identity::Identity;
pub use crate::remote::{ErrorClass, PollError, RemoteState};

/// The poll schedule and lease.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct PollState {
    /// When the task is next due; `None` for terminal tasks.
    pub next_poll_at: Option<Timestamp>,
    /// Consecutive failed polls; tracking is degraded from [`crate::policy::DEGRADED_AFTER`].
    pub consecutive_errors: u32,
    /// The last poll failure while errors are consecutive.
    pub last_error: Option<PollError>,
    /// The poll lease, if held.
    pub lease: Option<Lease>,
    /// Poll claims issued so far; the next claim's token is this plus one.
    pub claims: u64,
}

/// The notification outbox on the row: the version pair and the dispatch in flight.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct Outbox {
    /// Bumped whenever the event's fingerprint changes.
    pub event_version: u64,
    /// Every version up to this one is settled (delivered, dropped or dead-lettered).
    pub notified_version: u64,
    /// Fingerprint of the latest event; `None` when there is no event.
    pub fingerprint: Option<Fingerprint>,
    /// The latest event; `None` when nothing is worth saying.
    pub event: Option<Event>,
    /// Where the notification is.
    pub status: NotifyStatus,
    /// When the notification loop may next claim the row.
    pub due_at: Timestamp,
    /// The notification lease, if held.
    pub lease: Option<Lease>,
    /// Notification claims issued so far.
    pub claims: u64,
    /// The version of the frozen snapshot (the last one frozen, once a snapshot is dropped).
    pub dispatch_version: u64,
    /// The frozen snapshot being delivered; never overwritten while in flight.
    pub dispatch_event: Option<Event>,
    /// The attempt number of the frozen snapshot: part of the idempotency key.
    pub dispatch_attempt: u32,
    /// The run started for the current attempt.
    pub run_id: Option<RunId>,
    /// When the latest launch was answered with a run (set by every launch, never cleared):
    /// how old a dispatched row's run is, which [`crate::policy::Policy::max_run_life`] bounds.
    /// `None` only before the first launch.
    pub launched_at: Option<Timestamp>,
    /// Counted failures of the current dispatch version.
    pub failures: u32,
    /// Busy-thread (409) answers seen for this task, all versions: visible, never silent.
    pub busy_count: u32,
    /// The last delivery error (bounded).
    pub last_error: Option<String>,
    /// The last dead letter: which version and why.
    pub dead_letter: Option<(u64, DeadLetterReason)>,
    /// When a dispatch last ended without reopening the channel (delivered or dead-lettered):
    /// retention ages a row from the later of this and its last remote change, and a dead
    /// letter from this alone ([`crate::transitions::retention`]). `None` before the first end.
    #[serde(default)]
    pub settled_at: Option<Timestamp>,
    /// When the launcher's current unavailability began for this notification: the first
    /// launch or lookup of the episode that it did not answer (unreachable, timed out, 5xx).
    /// Cleared by any answer. Never a failure (DOMAIN §3); only
    /// [`crate::policy::Policy::max_unavailable`] past it ends the dispatch.
    #[serde(default)]
    pub unavailable_since: Option<Timestamp>,
    /// Unanswered launcher calls in a row for this notification: the exponent of its
    /// unavailability backoff. Reset by any answer.
    #[serde(default)]
    pub outages: u32,
}

impl Outbox {
    /// An outbox with nothing to deliver.
    pub fn empty(now: Timestamp) -> Self {
        Outbox {
            event_version: 0,
            notified_version: 0,
            fingerprint: None,
            event: None,
            status: NotifyStatus::None,
            due_at: now,
            lease: None,
            claims: 0,
            dispatch_version: 0,
            dispatch_event: None,
            dispatch_attempt: 0,
            run_id: None,
            launched_at: None,
            failures: 0,
            busy_count: 0,
            last_error: None,
            dead_letter: None,
            settled_at: None,
            unavailable_since: None,
            outages: 0,
        }
    }

    /// Undelivered work exists.
    pub fn has_undelivered(&self) -> bool {
        self.event_version > self.notified_version
    }
}

/// The cancel request and its work, with its own lease and budget.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct CancelState {
    /// When the first cancel request was recorded.
    pub requested_at: Option<Timestamp>,
    /// Where the cancel work is.
    pub status: CancelStatus,
    /// When the cancel loop may next claim the row.
    pub due_at: Option<Timestamp>,
    /// The cancel lease, if held.
    pub lease: Option<Lease>,
    /// Cancel claims issued so far.
    pub claims: u64,
    /// Counted failed remote cancels.
    pub failures: u32,
    /// The last cancel error (bounded).
    pub last_error: Option<String>,
    /// When the remote server's current unavailability began for this cancel (unreachable,
    /// timed out, 5xx, rate limited): never a failure (DOMAIN §6); only
    /// [`crate::policy::Policy::max_unavailable`] past it dead-letters the cancel.
    #[serde(default)]
    pub unavailable_since: Option<Timestamp>,
    /// Unanswered remote cancels in a row: the exponent of the unavailability backoff.
    #[serde(default)]
    pub outages: u32,
}

impl CancelState {
    /// No cancel requested.
    pub fn none() -> Self {
        CancelState {
            requested_at: None,
            status: CancelStatus::None,
            due_at: None,
            lease: None,
            claims: 0,
            failures: 0,
            last_error: None,
            unavailable_since: None,
            outages: 0,
        }
    }
}

/// The user's latest answer to a question of an `input_required` task, and where sending it is
/// ([`crate::transitions::answer`]). It rides the poll claim: there is no lease of its own.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct AnswerState {
    /// The question (request id) answered; kept after sending, so a second answer to the same
    /// request is refused.
    pub request_id: Option<String>,
    /// The answer itself: secret-like, never formatted; dropped once an attempt was made.
    #[serde(serialize_with = "crate::row_codec::optional_secret")]
    pub text: Option<Secret>,
    /// Where the answer is.
    pub status: AnswerStatus,
    /// When the answer was recorded.
    pub recorded_at: Option<Timestamp>,
    /// The fencing token of the poll claim that marked the attempt (status `sending` onwards).
    pub attempt_token: Option<LeaseToken>,
    /// Why sending failed (bounded), for `failed` and `unconfirmed`.
    pub error: Option<String>,
    /// Every request id answered that the input request still named when the latest answer
    /// was recorded, oldest first, the latest included: a second answer to any of them is
    /// refused. At most [`crate::policy::MAX_ANSWERED_REQUESTS`] ids.
    #[serde(default)]
    pub answered: Vec<String>,
}

impl AnswerState {
    /// No answer recorded.
    pub fn none() -> Self {
        AnswerState {
            request_id: None,
            text: None,
            status: AnswerStatus::None,
            recorded_at: None,
            attempt_token: None,
            error: None,
            answered: Vec::new(),
        }
    }
}

/// One task: the whole row.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct TaskRow {
    /// Identity and secrets.
    pub identity: Identity,
    /// Last applied remote state.
    pub remote: RemoteState,
    /// Poll schedule and lease.
    pub poll: PollState,
    /// Notification outbox.
    pub outbox: Outbox,
    /// Cancel work.
    pub cancel: CancelState,
    /// The user's latest answer to an input request.
    pub answer: AnswerState,
}

impl TaskRow {
    /// The task id.
    pub fn id(&self) -> &TaskId {
        &self.identity.task_id
    }

    /// The lease of the given kind.
    pub fn lease(&self, kind: LeaseKind) -> Option<&Lease> {
        match kind {
            LeaseKind::Poll => self.poll.lease.as_ref(),
            LeaseKind::Notify => self.outbox.lease.as_ref(),
            LeaseKind::Cancel => self.cancel.lease.as_ref(),
        }
    }

    /// Whether tracking is degraded (enough consecutive poll errors).
    pub fn tracking_degraded(&self) -> bool {
        self.poll.consecutive_errors >= crate::policy::DEGRADED_AFTER
    }

    /// Whether the row is settled: nothing undelivered, no dispatch or cancel in flight.
    pub fn is_quiet(&self) -> bool {
        !self.outbox.has_undelivered()
            && !self.outbox.status.in_flight()
            && self.cancel.status != CancelStatus::Requested
    }
}
