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
}
