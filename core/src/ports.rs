//! Ports: how the engine reaches the world. The remote server ([`Driver`]), the agent-run
//! gateway ([`Launcher`]) and time ([`Clock`]). Ids come from [`crate::ids::IdSource`].
//!
//! Implementations own their timeouts: a call must return (with an error if need be) well
//! within the loop's lease, or its result will be refused when written.

use crate::ids::{OwnerId, RunId, ServerId, ThreadId};
use crate::remote::ErrorClass;
use crate::secret::{RemoteHandle, Secret};
use crate::snapshot::RemoteReport;
use crate::time::Timestamp;
use serde::{Deserialize, Serialize};
use std::future::Future;

/// The caller's clock. Every store call receives its `now` from here.
pub trait Clock: Send + Sync {
    /// The current time.
    fn now(&self) -> Timestamp;

    /// Time elapsed since a fixed origin (the process's or the simulation's start) on a clock
    /// that never jumps: steps of the wall clock behind [`Clock::now`] do not show in it. The
    /// engine measures how much of a lease it has left on both.
    fn monotonic(&self) -> std::time::Duration;

    /// Waits `d` on this clock: real time for a wall clock, simulated time in the simulation.
    /// The engine's only wait is the bounded one for a run launched in the same claim
    /// ([`crate::policy::Policy::run_confirm_wait`]).
    fn sleep(&self, d: std::time::Duration) -> impl Future<Output = ()> + Send;
}

/// What the user asked to start on a remote server.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct SubmitRequest {
    /// The remote server.
    pub server: ServerId,
    /// The user on whose behalf it runs.
    pub owner: OwnerId,
    /// The task's name.
    pub name: String,
    /// The tool to call on the server.
    pub tool: String,
    /// The tool's arguments, passed through to the server as the caller wrote them (an MCP
    /// driver requires a JSON object and rejects anything else).
    pub arguments: String,
}

/// A remote task the server accepted.
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
pub struct Submitted {
    /// The handle to reach it again (secret).
    pub handle: RemoteHandle,
    /// The server's first report, if it sent one with the acceptance.
    pub report: Option<RemoteReport>,
}

/// How a remote call failed.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error, Serialize, Deserialize)]
pub enum DriverError {
    /// Transient: timeout, connection failure, 5xx, rate limit. Retried with backoff.
    #[error("remote unavailable ({}): {message}", class.as_str())]
    Unavailable {
        /// What kind of failure (fingerprints use only this).
        class: ErrorClass,
        /// Untrusted text; redacted and bounded before it is stored.
        message: String,
    },
    /// The server does not know the task: a protocol error, the task becomes `failed`.
    #[error("remote server does not know the task")]
    UnknownTask,
    /// The server's answer could not be decoded: a protocol error.
    #[error("malformed answer: {0}")]
    Malformed(String),
    /// The server refused the request (4xx other than not-found).
    #[error("rejected: {0}")]
    Rejected(String),
}

/// The remote tool server (an MCP server with tasks).
pub trait Driver: Send + Sync {
    /// Starts a remote task.
    fn submit(
        &self,
        req: &SubmitRequest,
    ) -> impl Future<Output = Result<Submitted, DriverError>> + Send;
    /// The current state of the task `handle` names on `server`.
    fn get_status(
        &self,
        server: &ServerId,
        handle: &RemoteHandle,
    ) -> impl Future<Output = Result<RemoteReport, DriverError>> + Send;
    /// Asks `server` to cancel the task; returns the state after the request.
    fn cancel(
        &self,
        server: &ServerId,
        handle: &RemoteHandle,
    ) -> impl Future<Output = Result<RemoteReport, DriverError>> + Send;
    /// Sends the user's `answer` to the open question `request_id` (as the task's input request
    /// names it) of the `input_required` task `handle` names. Called at most once per recorded
    /// answer. `Ok` means the server accepted it; `Rejected` (or `Malformed`, `UnknownTask`)
    /// means it was not accepted and is not retried; `Unavailable` means the outcome is unknown.
    /// The answer must never appear in an error, a log line or a report. A driver that cannot
    /// answer keeps this default: every answer is refused and nothing is sent.
    fn answer(
        &self,
        server: &ServerId,
        handle: &RemoteHandle,
        request_id: &str,
        answer: &Secret,
    ) -> impl Future<Output = Result<(), DriverError>> + Send {
        let _ = (server, handle, request_id, answer);
        std::future::ready(Err(DriverError::Rejected(
            "this driver cannot answer input requests".into(),
        )))
    }
}

/// A run that delivers one notification on a thread.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct RunRequest {
    /// `task:{task_id}:{dispatch_version}:{dispatch_attempt}`: the same key must yield the same run.
    pub key: String,
    /// The thread's owner.
    pub owner: OwnerId,
    /// The thread the run is on.
    pub thread: ThreadId,
    /// The hidden input: trusted instruction plus the framed event.
    pub prompt: String,
}

/// What the launcher said to a run request (DOMAIN §3 "Delivery").
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub enum LaunchOutcome {
    /// The run for this key (new, or the existing one for a repeated key).
    Started(RunId),
    /// 409: another run is active on the thread; nothing was queued.
    Busy,
    /// 404: the thread does not exist (deleted); nothing was created.
    ThreadGone,
    /// The launch was refused for the request itself (a 4xx other than 404 and 409, an answer
    /// that makes no sense): counted against the failure budget; the run may or may not exist.
    Failed(String),
    /// The launcher could not be reached, timed out or answered 5xx: not a failure of the event
    /// (DOMAIN §3), waited out; the run may or may not exist, so the same key is retried.
    Unavailable(String),
}

/// A run's state as the launcher reports it.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Accepted, not started.
    Pending,
    /// Running.
    Running,
    /// Ended successfully: the notification was delivered.
    Success,
    /// Ended with an error.
    Error,
    /// Ran out of time.
    Timeout,
    /// Stopped from outside.
    Interrupted,
    /// The launcher has no such run.
    Missing,
}

impl RunStatus {
    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Pending => "pending",
            RunStatus::Running => "running",
            RunStatus::Success => "success",
            RunStatus::Error => "error",
            RunStatus::Timeout => "timeout",
            RunStatus::Interrupted => "interrupted",
            RunStatus::Missing => "missing",
        }
    }
}

/// The agent-run gateway.
pub trait Launcher: Send + Sync {
    /// Starts (or finds, for a repeated key) the run for `req.key`.
    fn start_run(&self, req: RunRequest) -> impl Future<Output = LaunchOutcome> + Send;
    /// The state of `run`, started on `thread`; `Err` when the launcher could not be asked
    /// (unreachable, timed out, 5xx, an answer that could not be read): unavailability, waited
    /// out and never counted against the failure budget.
    /// (Agent servers address runs under their thread, so the thread is always given.)
    fn run_status(
        &self,
        thread: &ThreadId,
        run: &RunId,
    ) -> impl Future<Output = Result<RunStatus, String>> + Send;
    /// Interrupts `run`, started on `thread`, which outlived
    /// [`crate::policy::Policy::max_run_life`]: `Ok` once the run is over (interrupted now, or
    /// ended already), so its thread is free for the next run; `Err` when the launcher could not
    /// be asked or refused. A launcher that cannot interrupt keeps this default: every interrupt
    /// is refused and nothing is sent.
    fn interrupt_run(
        &self,
        thread: &ThreadId,
        run: &RunId,
    ) -> impl Future<Output = Result<(), String>> + Send {
        let _ = (thread, run);
        std::future::ready(Err("this launcher cannot interrupt runs".to_owned()))
    }
}
