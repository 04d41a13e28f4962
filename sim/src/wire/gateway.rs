//! The launcher protocol between clients and the `gateway` host.

use serde::{Deserialize, Serialize};
use tasklatch_core::ids::{OwnerId, RunId, ThreadId};
use tasklatch_core::ports::{LaunchOutcome, RunRequest, RunStatus};

/// A launcher call.
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
pub enum GatewayRequest {
    /// Start (or find) the run for a key.
    Launch(RunRequest),
    /// A run's status.
    Lookup(RunId),
    /// Create a thread (users do this before submitting on it).
    CreateThread(OwnerId, ThreadId),
    /// Delete a thread.
    DeleteThread(ThreadId),
    /// `langgraph` mode: `GET /threads/{thread}/runs?limit&offset` (newest first).
    ListRuns {
        /// The thread.
        thread: ThreadId,
        /// Page size.
        limit: u32,
        /// Runs to skip.
        offset: u32,
    },
    /// `langgraph` mode: `POST /threads/{thread}/runs`, the key in the run's metadata.
    CreateRun {
        /// Key, owner, thread and hidden input.
        req: RunRequest,
        /// The assistant to run.
        assistant: String,
        /// `multitask_strategy: "reject"` (else the server's default, `enqueue`).
        reject: bool,
    },
    /// `langgraph` mode: `POST /threads/{thread}/runs/{run}/cancel?action=rollback`.
    CancelRun {
        /// The thread.
        thread: ThreadId,
        /// The run.
        run: RunId,
    },
    /// Ends a run that outlived the engine's `max_run_life` as interrupted (ledger mode: in the
    /// ledger; `langgraph` mode: `POST /threads/{thread}/runs/{run}/cancel?action=interrupt`).
    InterruptRun {
        /// The thread.
        thread: ThreadId,
        /// The run.
        run: RunId,
    },
    /// `langgraph` mode: `GET /assistants/{id}` (the server's 404 is ambiguous without it).
    GetAssistant(String),
}

/// One run of a `langgraph`-mode run list.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct ListedRun {
    /// The server's order: creation time (ms), then sequence.
    pub order: (u64, u64),
    /// Run id.
    pub run: RunId,
    /// The key in its metadata.
    pub key: String,
}

/// A `langgraph`-mode create's answer, as HTTP statuses.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub enum CreateAnswer {
    /// 200 with the run.
    Created(RunId),
    /// 409.
    Busy,
    /// 404: thread or assistant not found.
    NotFound,
    /// 5xx.
    Error(String),
}

/// A launcher call's answer.
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
pub enum GatewayResponse {
    /// Launch.
    Launch(LaunchOutcome),
    /// Lookup.
    Lookup(Result<RunStatus, String>),
    /// Thread administration.
    Done(Result<(), String>),
    /// `langgraph` mode: a page of runs; `Ok(None)` is 404 (thread or assistant not found).
    Runs(Result<Option<Vec<ListedRun>>, String>),
    /// `langgraph` mode: a create.
    Created(CreateAnswer),
    /// `langgraph` mode: a rollback cancel — `Ok(true)` rolled back, `Ok(false)` the run had
    /// already ended and stays.
    Cancelled(Result<bool, String>),
    /// `langgraph` mode: whether the assistant exists.
    Assistant(bool),
}
