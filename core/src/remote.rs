//! The remote job as the engine last applied it, and how polling it fails (DOMAIN §1, §4).
//!
//! These are what an event is built from ([`crate::event::Event::build`]) and what the task row
//! keeps ([`crate::task::TaskRow::remote`], [`crate::task::PollState::last_error`]).

use crate::snapshot::Observed;
use crate::status::RemoteStatus;
use crate::time::Timestamp;
use serde::{Deserialize, Serialize};

/// The last remote state the engine applied.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct RemoteState {
    /// Remote status.
    pub status: RemoteStatus,
    /// Result or its bounded preview.
    pub result: Option<String>,
    /// Whether `result` is a truncated preview.
    pub result_truncated: bool,
    /// Artifact reference.
    pub artifact: Option<String>,
    /// Remote error, bounded to the stored limit.
    pub error: Option<String>,
    /// What the remote job asks the user.
    pub input_request: Option<String>,
    /// When the user-visible state last changed (status, content, cancel request).
    pub updated_at: Timestamp,
    /// When a remote report was last applied.
    pub observed_at: Option<Timestamp>,
}

impl RemoteState {
    /// The state of a task persisted before its first report.
    pub fn submitted(at: Timestamp) -> Self {
        RemoteState {
            status: RemoteStatus::Submitted,
            result: None,
            result_truncated: false,
            artifact: None,
            error: None,
            input_request: None,
            updated_at: at,
            observed_at: None,
        }
    }

    /// The state after applying `obs` at `at`; `updated_at` moves only if something changed.
    pub fn observe(&self, obs: &Observed, at: Timestamp) -> Self {
        let mut next = RemoteState {
            status: obs.status,
            result: obs.result.clone(),
            result_truncated: obs.result_truncated,
            artifact: obs.artifact.clone(),
            error: obs.error.clone(),
            input_request: obs.input_request.clone(),
            updated_at: self.updated_at,
            observed_at: Some(at),
        };
        if !next.same_content(self) {
            next.updated_at = at;
        }
        next
    }

    fn same_content(&self, other: &RemoteState) -> bool {
        self.status == other.status
            && self.result == other.result
            && self.result_truncated == other.result_truncated
            && self.artifact == other.artifact
            && self.error == other.error
            && self.input_request == other.input_request
    }
}

/// The class of a poll failure. Fingerprints use the class, never the text (no churn).
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorClass {
    /// The call did not answer in time.
    Timeout,
    /// The connection failed.
    Connection,
    /// The server answered with an error (5xx and the like).
    Server,
    /// The server asked us to slow down.
    RateLimited,
    /// The answer could not be decoded (a proxy's page, a cut stream, an unexpected content
    /// type): passing until it repeats ([`crate::policy::MALFORMED_STRIKES`]).
    Malformed,
}

impl ErrorClass {
    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorClass::Timeout => "timeout",
            ErrorClass::Connection => "connection",
            ErrorClass::Server => "server",
            ErrorClass::RateLimited => "rate_limited",
            ErrorClass::Malformed => "malformed",
        }
    }
}

/// The last poll failure: its class and bounded text.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct PollError {
    /// What kind of failure.
    pub class: ErrorClass,
    /// The failure's text, bounded to the stored limit.
    pub message: String,
}
