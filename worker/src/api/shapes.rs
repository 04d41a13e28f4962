//! The API's request and answer bodies, as documented in `/openapi.json`.
//!
//! Answers are built field by field from core's whitelisted public shapes (`PublicTask`,
//! `TaskDetail`): no field here could hold a remote task id, a session id or driver data.
//! Times are RFC 3339 strings in UTC with microseconds.

use serde::{Deserialize, Serialize};
use tasklatch_core::status::{AnswerStatus, NotifyStatus, RemoteStatus};
use tasklatch_core::store::CancelOutcome;
use tasklatch_core::text::{AnswerView, CancelProgress, PublicTask, TaskDetail};
use tasklatch_core::time::Timestamp;
use utoipa::ToSchema;

/// A task to start on a remote MCP server, bound to the caller and the thread in the path.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SubmitBody {
    /// The MCP server, by the id the worker's configuration gives it (the document served by a
    /// worker lists its servers).
    #[schema(min_length = 1, max_length = 200)]
    pub server: String,
    /// The tool to call on that server (no control or bidirectional formatting characters).
    #[schema(
        min_length = 1,
        max_length = 200,
        pattern = r"^[^\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]+$"
    )]
    pub tool: String,
    /// The tool's arguments (a JSON object; default `{}`).
    #[serde(default)]
    #[schema(value_type = Object)]
    pub arguments: serde_json::Map<String, serde_json::Value>,
    /// A name for the task (1 to 200 characters, no control or bidirectional formatting
    /// characters), shown in listings and usable to cancel it.
    #[schema(
        min_length = 1,
        max_length = 200,
        pattern = r"^[^\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]+$"
    )]
    pub name: String,
}

/// A cancel by name.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CancelByName {
    /// The exact name of one of the caller's active tasks in this thread.
    #[schema(min_length = 1, max_length = 200, pattern = r"^[^\u0000]+$")]
    pub name: String,
}

/// The user's answer to one question of an `input_required` task.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AnswerBody {
    /// The question's id, as the task's input request names it (`[q…]`).
    #[schema(min_length = 1, max_length = 64, pattern = r"^[A-Za-z0-9_-]+$")]
    pub request_id: String,
    /// The client's result for that question, as a JSON object (for an elicitation:
    /// `{"action": "accept", "content": {...}}`), at most 16 KiB once serialised. It is sent to
    /// the server once and never shown again.
    #[schema(value_type = Object)]
    pub answer: serde_json::Map<String, serde_json::Value>,
}

/// What an answer did.
#[derive(Serialize, ToSchema, Clone, Copy)]
#[serde(rename_all = "snake_case")]
pub enum AnswerResult {
    /// Recorded: the worker sends it with the task's next poll, at most once.
    Recorded,
}

/// The reply to an answer.
#[derive(Serialize, ToSchema)]
pub struct Answered {
    /// The task concerned.
    pub task_id: String,
    /// What the request did.
    pub result: AnswerResult,
}

/// Where the user's latest answer is.
#[derive(Serialize, ToSchema, Clone, Copy)]
#[serde(rename_all = "snake_case")]
pub enum AnswerState {
    /// Waits for the task's next poll.
    Pending,
    /// Being sent.
    Sending,
    /// The server accepted it.
    Sent,
    /// An attempt was made and its outcome is unknown; it is never sent again.
    Unconfirmed,
    /// Not accepted (refused by the driver or the server).
    Failed,
}

/// The user's latest answer: its question and where it is, never its text.
#[derive(Serialize, ToSchema)]
pub struct AnswerInfo {
    /// The question answered.
    pub request_id: String,
    /// Where the answer is.
    pub status: AnswerState,
}

impl AnswerInfo {
    fn of(view: AnswerView) -> Option<AnswerInfo> {
        let status = match view.status {
            AnswerStatus::None => return None,
            AnswerStatus::Pending => AnswerState::Pending,
            AnswerStatus::Sending => AnswerState::Sending,
            AnswerStatus::Sent => AnswerState::Sent,
            AnswerStatus::Unconfirmed => AnswerState::Unconfirmed,
            AnswerStatus::Failed => AnswerState::Failed,
        };
        Some(AnswerInfo {
            request_id: view.request_id,
            status,
        })
    }
}

/// The answer to a submit.
#[derive(Serialize, ToSchema)]
pub struct Submitted {
    /// The new task's id.
    pub task_id: String,
}

/// A remote task's status.
#[derive(Serialize, ToSchema, Clone, Copy)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Persisted, not polled yet.
    Submitted,
    /// Running remotely.
    Working,
    /// Waiting for an answer from the user.
    InputRequired,
    /// Finished with a result.
    Completed,
    /// Finished with an error.
    Failed,
    /// Cancelled.
    Cancelled,
}

impl From<RemoteStatus> for Status {
    fn from(s: RemoteStatus) -> Self {
        match s {
            RemoteStatus::Submitted => Status::Submitted,
            RemoteStatus::Working => Status::Working,
            RemoteStatus::InputRequired => Status::InputRequired,
            RemoteStatus::Completed => Status::Completed,
            RemoteStatus::Failed => Status::Failed,
            RemoteStatus::Cancelled => Status::Cancelled,
        }
    }
}

/// Where the notification of a task's latest state is.
#[derive(Serialize, ToSchema, Clone, Copy)]
#[serde(rename_all = "snake_case")]
pub enum NotificationStatus {
    /// Nothing to deliver.
    None,
    /// Waiting to be sent.
    Pending,
    /// Being sent.
    Claimed,
    /// A run was started; waiting for it to end.
    Dispatched,
    /// The run failed; it will be tried again.
    Retry,
    /// Delivered.
    Delivered,
    /// Given up (the thread is gone, or the failure budget is spent).
    DeadLetter,
}

impl From<NotifyStatus> for NotificationStatus {
    fn from(s: NotifyStatus) -> Self {
        match s {
            NotifyStatus::None => NotificationStatus::None,
            NotifyStatus::Pending => NotificationStatus::Pending,
            NotifyStatus::Claimed => NotificationStatus::Claimed,
            NotifyStatus::Dispatched => NotificationStatus::Dispatched,
            NotifyStatus::Retry => NotificationStatus::Retry,
            NotifyStatus::Delivered => NotificationStatus::Delivered,
            NotifyStatus::DeadLetter => NotificationStatus::DeadLetter,
        }
    }
}

/// Where a requested cancel is.
#[derive(Serialize, ToSchema, Clone, Copy)]
#[serde(rename_all = "snake_case")]
pub enum CancelState {
    /// Cancel work is pending: the worker will call the remote server's cancel.
    Requested,
    /// The remote server answered the cancel; the task's real end is still delivered.
    Sent,
    /// The cancel was given up (budget spent, or the server unreachable too long); the task
    /// is still watched, and an operator can requeue the cancel.
    Failed,
}

impl From<CancelProgress> for CancelState {
    fn from(p: CancelProgress) -> Self {
        match p {
            CancelProgress::Requested => CancelState::Requested,
            CancelProgress::Sent => CancelState::Sent,
            CancelProgress::Failed => CancelState::Failed,
        }
    }
}

/// A task in a listing: exactly the 7 public fields.
#[derive(Serialize, ToSchema)]
pub struct Task {
    /// The task's id.
    pub task_id: String,
    /// Its name (untrusted text, neutralised).
    pub name: String,
    /// The remote status.
    pub status: Status,
    /// When the task was persisted.
    #[schema(format = DateTime)]
    pub created_at: String,
    /// When its visible state last changed.
    #[schema(format = DateTime)]
    pub updated_at: String,
    /// The remote error (untrusted text, neutralised, at most 500 characters).
    pub error: Option<String>,
    /// Whether a cancel was requested.
    pub cancel_requested: bool,
}

impl From<PublicTask> for Task {
    fn from(p: PublicTask) -> Self {
        Task {
            task_id: p.task_id.0,
            name: p.name,
            status: p.status.into(),
            created_at: rfc3339(p.created_at),
            updated_at: rfc3339(p.updated_at),
            error: p.error,
            cancel_requested: p.cancel_requested,
        }
    }
}

/// A task's detail: the 7 public fields and the whitelisted additions.
#[derive(Serialize, ToSchema)]
pub struct TaskDetailBody {
    /// The task's id.
    pub task_id: String,
    /// Its name (untrusted text, neutralised).
    pub name: String,
    /// The remote status.
    pub status: Status,
    /// When the task was persisted.
    #[schema(format = DateTime)]
    pub created_at: String,
    /// When its visible state last changed.
    #[schema(format = DateTime)]
    pub updated_at: String,
    /// The remote error (untrusted text, neutralised, at most 500 characters).
    pub error: Option<String>,
    /// Whether a cancel was requested.
    pub cancel_requested: bool,
    /// The result, at most 2,000 characters (untrusted text, neutralised).
    pub result_preview: Option<String>,
    /// Whether the preview is shorter than the result.
    pub result_truncated: bool,
    /// What the remote job asks, while its status is `input_required`.
    pub input_request: Option<String>,
    /// Where the notification of the latest state is.
    pub notification_status: NotificationStatus,
    /// Busy-thread (409) answers met while notifying this task's thread.
    pub busy_count: u32,
    /// When the Agent Server's current outage began for this task's notification: the
    /// notification waits for the Agent Server since then (an outage is never counted as a
    /// failure); `null` when it is not waiting for one.
    #[schema(format = DateTime)]
    pub notification_unavailable_since: Option<String>,
    /// Where the cancel is; `null` when no cancel was requested.
    pub cancel_status: Option<CancelState>,
    /// While the cancel is `requested`: when the MCP server's current outage began for it (the
    /// cancel waits for the server since then; an outage is never counted as a failure);
    /// otherwise `null` (a cancel given up reads `failed` in `cancel_status`).
    #[schema(format = DateTime)]
    pub cancel_unavailable_since: Option<String>,
    /// The user's latest answer to a question of the task, if any (never its text).
    pub answer: Option<AnswerInfo>,
}

impl From<TaskDetail> for TaskDetailBody {
    fn from(d: TaskDetail) -> Self {
        let t = Task::from(d.task);
        TaskDetailBody {
            task_id: t.task_id,
            name: t.name,
            status: t.status,
            created_at: t.created_at,
            updated_at: t.updated_at,
            error: t.error,
            cancel_requested: t.cancel_requested,
            result_preview: d.result_preview,
            result_truncated: d.result_truncated,
            input_request: d.input_request,
            notification_status: d.notification_status.into(),
            busy_count: d.busy_count,
            notification_unavailable_since: d.notification_unavailable_since.map(rfc3339),
            cancel_status: d.cancel_status.map(CancelState::from),
            cancel_unavailable_since: d.cancel_unavailable_since.map(rfc3339),
            answer: d.answer.and_then(AnswerInfo::of),
        }
    }
}

/// A page of the caller's tasks in a thread, newest first.
#[derive(Serialize, ToSchema)]
pub struct TaskList {
    /// At most `limit` tasks.
    pub tasks: Vec<Task>,
}

/// What a cancel request did.
#[derive(Serialize, ToSchema, Clone, Copy)]
#[serde(rename_all = "snake_case")]
pub enum CancelResult {
    /// Recorded: the worker will cancel the remote task.
    Requested,
    /// A cancel was already requested; nothing changed.
    AlreadyRequested,
    /// The task had already finished; nothing to cancel.
    AlreadyFinished,
}

/// The answer to a cancel request.
#[derive(Serialize, ToSchema)]
pub struct Cancelled {
    /// The task concerned.
    pub task_id: String,
    /// What the request did.
    pub result: CancelResult,
}

impl Cancelled {
    /// The answer for an outcome naming a task; `None` for not-found and ambiguous names.
    pub fn of(outcome: CancelOutcome) -> Option<Cancelled> {
        let (task, result) = match outcome {
            CancelOutcome::Requested(t) => (t, CancelResult::Requested),
            CancelOutcome::AlreadyRequested(t) => (t, CancelResult::AlreadyRequested),
            CancelOutcome::AlreadyFinished(t) => (t, CancelResult::AlreadyFinished),
            CancelOutcome::NotFound | CancelOutcome::Ambiguous(_) => return None,
        };
        Some(Cancelled {
            task_id: task.0,
            result,
        })
    }
}

/// `t` as an RFC 3339 UTC time with microseconds (the epoch for an unrepresentable time).
pub fn rfc3339(t: Timestamp) -> String {
    chrono::DateTime::from_timestamp_micros(t.as_micros())
        .unwrap_or_default()
        .to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_rfc3339_with_microseconds() {
        assert_eq!(
            rfc3339(Timestamp::from_micros(1_700_000_000_123_456)),
            "2023-11-14T22:13:20.123456Z"
        );
        assert_eq!(
            rfc3339(Timestamp::from_micros(i64::MAX)),
            "1970-01-01T00:00:00.000000Z"
        );
    }
}
