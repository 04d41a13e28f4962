//! What the simulated remote task server sends over the wire, and how a driver decodes it.
//!
//! The wire can carry what JSON cannot: a NaN poll hint and bytes that are not UTF-8. A driver
//! decodes every text lossily (invalid UTF-8 becomes U+FFFD), exactly as a real HTTP client
//! decoding a body would; the checker uses the same decoding to know what the engine saw.

use serde::{Deserialize, Serialize};
use tasklatch_core::snapshot::RemoteReport;

/// Text as sent: valid UTF-8, or raw bytes.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WireText {
    /// UTF-8 text.
    Utf8(String),
    /// Arbitrary bytes.
    Bytes(Vec<u8>),
}

impl WireText {
    /// The text a receiving driver decodes.
    pub fn decode(&self) -> String {
        match self {
            WireText::Utf8(s) => s.clone(),
            WireText::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
        }
    }
}

/// A poll hint as sent: seconds, or NaN (which JSON cannot carry as a number).
#[derive(Copy, Clone, PartialEq, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WireHint {
    /// Seconds.
    Secs(f64),
    /// Not a number.
    NotANumber,
}

/// A task report as sent.
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
pub struct WireReport {
    /// The task's remote id as the server states it.
    pub task_id: String,
    /// Status spelling.
    pub status: String,
    /// Poll hint.
    pub hint: Option<WireHint>,
    /// Result.
    pub result: Option<WireText>,
    /// Artifact.
    pub artifact: Option<WireText>,
    /// Error.
    pub error: Option<WireText>,
    /// Input request.
    pub input_request: Option<WireText>,
}

impl WireReport {
    /// The report a driver decodes from this wire report.
    pub fn decode(&self) -> RemoteReport {
        RemoteReport {
            task_id: self.task_id.clone(),
            status: self.status.clone(),
            poll_hint_secs: self.hint.map(|h| match h {
                WireHint::Secs(s) => s,
                WireHint::NotANumber => f64::NAN,
            }),
            result: self.result.as_ref().map(WireText::decode),
            artifact: self.artifact.as_ref().map(WireText::decode),
            error: self.error.as_ref().map(WireText::decode),
            input_request: self.input_request.as_ref().map(WireText::decode),
        }
    }
}

/// A request to the remote server.
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
pub enum McpRequest {
    /// Start a task. `input` names the plan's task (`task-{n}`).
    Submit {
        /// Owner.
        owner: String,
        /// Input.
        input: String,
    },
    /// Report a task's state.
    Status {
        /// Remote id.
        remote_id: String,
    },
    /// Cancel a task and report its state.
    Cancel {
        /// Remote id.
        remote_id: String,
    },
    /// Answer a question the task asked (`tasks/update`).
    Answer {
        /// Remote id.
        remote_id: String,
        /// The question's id, as the input request names it.
        request_id: String,
        /// The user's answer (secret).
        text: String,
    },
}

/// The remote server's answer.
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum McpAnswer {
    /// A task was created (or, for a duplicate-handle quirk, an existing one returned).
    Created {
        /// Remote id (secret).
        remote_id: String,
        /// Driver data (secret).
        driver_data: String,
        /// Its first report.
        report: WireReport,
    },
    /// A report.
    Report(WireReport),
    /// An answer was taken. Like the real servers, an answer naming no open question is
    /// taken too, and silently ignored.
    AnswerTaken,
    /// The server does not know the task.
    Unknown,
    /// A transient server error (the text may echo the remote id).
    Unavailable(String),
    /// The request was refused (unknown input).
    Rejected(String),
}
