//! What a remote server reports about a task, and how it is checked before anything is stored.
//!
//! Everything in a [`RemoteReport`] is untrusted (DOMAIN §8). [`validate`] turns it into an
//! [`Observed`] state or a [`ProtocolError`]: wrong task id, unknown status, NaN or negative hint,
//! oversized input request or artifact. Text is made storable (NUL bytes replaced), the task's own
//! secrets are redacted from it, and an oversized result is cut to a bounded preview with a flag.

use crate::policy::{
    bounded, MAX_ARTIFACT, MAX_INPUT_REQUEST, MAX_RESULT_PREVIEW, MAX_STORED_ERROR,
};
use crate::secret::RemoteHandle;
use crate::status::RemoteStatus;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::time::Duration;

/// A remote server's raw answer about one task, as a driver decoded it.
///
/// `task_id` is the remote id, a secret: its `Debug` prints a placeholder for it. The texts are
/// untrusted and may echo secrets too, so they are printed only redacted (never formatted
/// before [`validate`]): `Debug` shows their presence and length, not their content.
#[derive(Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RemoteReport {
    /// The remote's id for the task; must match the handle that was asked about.
    pub task_id: String,
    /// The remote status, spelled as in [`RemoteStatus`] (never `submitted`).
    pub status: String,
    /// The server's suggested delay before the next poll, in seconds.
    pub poll_hint_secs: Option<f64>,
    /// The result (completed tasks).
    pub result: Option<String>,
    /// A reference to an artifact the task produced.
    pub artifact: Option<String>,
    /// The error (failed tasks).
    pub error: Option<String>,
    /// What the remote job asks the user (input_required tasks).
    pub input_request: Option<String>,
}

impl fmt::Debug for RemoteReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = |t: &Option<String>| t.as_ref().map(|s| format!("<{} bytes>", s.len()));
        f.debug_struct("RemoteReport")
            .field("task_id", &format_args!("<redacted>"))
            .field("status", &self.status)
            .field("poll_hint_secs", &self.poll_hint_secs)
            .field("result", &text(&self.result))
            .field("artifact", &text(&self.artifact))
            .field("error", &text(&self.error))
            .field("input_request", &text(&self.input_request))
            .finish()
    }
}

/// A validated remote state, safe to store and to show after framing.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct Observed {
    /// The remote status.
    pub status: RemoteStatus,
    /// The result, or its bounded preview.
    pub result: Option<String>,
    /// Whether `result` is a truncated preview.
    pub result_truncated: bool,
    /// The artifact reference.
    pub artifact: Option<String>,
    /// The remote error, bounded to the stored limit.
    pub error: Option<String>,
    /// The input request.
    pub input_request: Option<String>,
    /// The server's poll hint, if it gave a usable one.
    pub poll_hint: Option<Duration>,
}

/// The input request of an `input_required` report that carries no question.
pub const NO_QUESTION: &str =
    "the task is waiting for input, but the remote server did not say what it asks";

/// A report that breaks the protocol: the task becomes terminal `failed`, never retried forever.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error, Serialize, Deserialize)]
pub enum ProtocolError {
    /// The report is about another task.
    #[error("the report names a different task")]
    WrongTaskId,
    /// The status is not one of the protocol's.
    #[error("unknown remote status")]
    UnknownStatus,
    /// The poll hint is NaN, infinite or negative.
    #[error("invalid poll interval hint")]
    BadPollHint,
    /// The input request exceeds its limit.
    #[error("input request larger than {MAX_INPUT_REQUEST} characters")]
    InputRequestTooLarge,
    /// The artifact reference exceeds its limit.
    #[error("artifact larger than {MAX_ARTIFACT} characters")]
    ArtifactTooLarge,
    /// The remote server no longer knows the task.
    #[error("the remote server does not know this task")]
    UnknownTask,
    /// The payload could not be decoded. The detail is already redacted and bounded.
    #[error("malformed payload: {0}")]
    Malformed(String),
}

/// Replaces NUL (which Postgres text rejects) with U+FFFD and redacts the handle's secrets.
pub fn storable(text: &str, handle: &RemoteHandle) -> String {
    handle.redact(&text.replace('\0', "\u{FFFD}"))
}

/// Checks a report against the handle it answers for (DOMAIN §4, §8).
pub fn validate(report: &RemoteReport, handle: &RemoteHandle) -> Result<Observed, ProtocolError> {
    if report.task_id != handle.remote_task_id.expose() {
        return Err(ProtocolError::WrongTaskId);
    }
    let status: RemoteStatus = report
        .status
        .parse()
        .map_err(|_| ProtocolError::UnknownStatus)?;
    if status == RemoteStatus::Submitted {
        return Err(ProtocolError::UnknownStatus);
    }
    let poll_hint = match report.poll_hint_secs {
        None => None,
        Some(h) if h.is_finite() && h >= 0.0 => {
            Some(Duration::from_secs_f64(h.min(u32::MAX as f64)))
        }
        Some(_) => return Err(ProtocolError::BadPollHint),
    };
    let clean = |t: &Option<String>| t.as_deref().map(|s| storable(s, handle));
    let input_request = match clean(&report.input_request) {
        // A legacy server sends its question only on the `tasks/result` stream: when that is
        // lost, the task asks without saying what. The user is told so, never left guessing.
        Some(q) if !q.trim().is_empty() => Some(q),
        _ if status == RemoteStatus::InputRequired => Some(NO_QUESTION.to_owned()),
        other => other,
    };
    if input_request
        .as_ref()
        .is_some_and(|s| s.chars().count() > MAX_INPUT_REQUEST)
    {
        return Err(ProtocolError::InputRequestTooLarge);
    }
    let artifact = clean(&report.artifact);
    if artifact
        .as_ref()
        .is_some_and(|s| s.chars().count() > MAX_ARTIFACT)
    {
        return Err(ProtocolError::ArtifactTooLarge);
    }
    let (result, result_truncated) = match clean(&report.result) {
        Some(r) if r.chars().count() > MAX_RESULT_PREVIEW => {
            (Some(bounded(&r, MAX_RESULT_PREVIEW)), true)
        }
        other => (other, false),
    };
    let error = clean(&report.error).map(|e| bounded(&e, MAX_STORED_ERROR));
    Ok(Observed {
        status,
        result,
        result_truncated,
        artifact,
        error,
        input_request,
        poll_hint,
    })
}

impl ProtocolError {
    /// The terminal `failed` state a protocol error leads to, with a bounded error text.
    pub fn into_observed(self) -> Observed {
        Observed {
            status: RemoteStatus::Failed,
            result: None,
            result_truncated: false,
            artifact: None,
            error: Some(bounded(
                &format!("protocol error: {self}"),
                MAX_STORED_ERROR,
            )),
            input_request: None,
            poll_hint: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secret::Secret;

    fn handle() -> RemoteHandle {
        RemoteHandle {
            remote_task_id: Secret::new("rem-SECRET-1"),
            driver_data: Secret::new("drv-SECRET-2"),
        }
    }

    fn report(status: &str) -> RemoteReport {
        RemoteReport {
            task_id: "rem-SECRET-1".into(),
            status: status.into(),
            ..Default::default()
        }
    }

    #[test]
    fn wrong_task_id_is_a_protocol_error() {
        let r = RemoteReport {
            task_id: "other".into(),
            ..report("working")
        };
        assert_eq!(validate(&r, &handle()), Err(ProtocolError::WrongTaskId));
    }

    #[test]
    fn unknown_or_local_status_is_a_protocol_error() {
        assert_eq!(
            validate(&report("done"), &handle()),
            Err(ProtocolError::UnknownStatus)
        );
        assert_eq!(
            validate(&report("submitted"), &handle()),
            Err(ProtocolError::UnknownStatus)
        );
    }

    #[test]
    fn nan_infinite_or_negative_hint_is_a_protocol_error() {
        for h in [f64::NAN, f64::INFINITY, -1.0] {
            let r = RemoteReport {
                poll_hint_secs: Some(h),
                ..report("working")
            };
            assert_eq!(
                validate(&r, &handle()),
                Err(ProtocolError::BadPollHint),
                "hint {h}"
            );
        }
        let ok = RemoteReport {
            poll_hint_secs: Some(2.5),
            ..report("working")
        };
        assert_eq!(
            validate(&ok, &handle()).map(|o| o.poll_hint),
            Ok(Some(Duration::from_millis(2500)))
        );
    }

    #[test]
    fn oversized_input_request_or_artifact_is_a_protocol_error() {
        let big = "x".repeat(MAX_INPUT_REQUEST + 1);
        let r = RemoteReport {
            input_request: Some(big.clone()),
            ..report("input_required")
        };
        assert_eq!(
            validate(&r, &handle()),
            Err(ProtocolError::InputRequestTooLarge)
        );
        let r = RemoteReport {
            artifact: Some("y".repeat(MAX_ARTIFACT + 1)),
            ..report("completed")
        };
        assert_eq!(
            validate(&r, &handle()),
            Err(ProtocolError::ArtifactTooLarge)
        );
        let fits = RemoteReport {
            input_request: Some("x".repeat(MAX_INPUT_REQUEST)),
            ..report("input_required")
        };
        assert!(validate(&fits, &handle()).is_ok());
    }

    #[test]
    fn oversized_result_keeps_a_bounded_preview_and_a_flag() {
        let r = RemoteReport {
            result: Some("é".repeat(MAX_RESULT_PREVIEW + 10)),
            ..report("completed")
        };
        let o = validate(&r, &handle()).unwrap();
        assert!(o.result_truncated);
        assert_eq!(o.result.unwrap().chars().count(), MAX_RESULT_PREVIEW);
        let small = validate(
            &RemoteReport {
                result: Some("{\"a\":1}".into()),
                ..report("completed")
            },
            &handle(),
        )
        .unwrap();
        assert_eq!(
            (small.result.as_deref(), small.result_truncated),
            (Some("{\"a\":1}"), false)
        );
    }

    #[test]
    fn text_is_made_storable_and_secrets_are_redacted() {
        let r = RemoteReport {
            result: Some("a\0b rem-SECRET-1 drv-SECRET-2".into()),
            error: Some("e".repeat(MAX_STORED_ERROR + 5)),
            ..report("completed")
        };
        let o = validate(&r, &handle()).unwrap();
        assert_eq!(
            o.result.as_deref(),
            Some("a\u{FFFD}b [redacted] [redacted]")
        );
        assert_eq!(o.error.unwrap().chars().count(), MAX_STORED_ERROR);
    }

    #[test]
    fn debug_of_a_report_prints_neither_the_remote_id_nor_its_texts() {
        let r = RemoteReport {
            result: Some("echo rem-SECRET-1".into()),
            error: Some("drv-SECRET-2".into()),
            ..report("completed")
        };
        let dbg = format!("{r:?}");
        assert!(!dbg.contains("SECRET"), "{dbg}");
        assert!(dbg.contains("task_id: <redacted>") && dbg.contains("\"completed\""));
        assert!(dbg.contains("result: Some(\"<17 bytes>\")"), "{dbg}");
    }

    #[test]
    fn nested_short_and_partial_secrets_are_redacted_before_storing() {
        let h = RemoteHandle {
            remote_task_id: Secret::new("4321"),
            driver_data: Secret::new("sess-SECRET-77:4321"),
        };
        let r = RemoteReport {
            task_id: "4321".into(),
            result: Some("task 4321 of sess-SECRET-77:4321; 43210 rows".into()),
            error: Some("session sess-SECRET-7 lost".into()),
            ..report("failed")
        };
        let o = validate(&r, &h).unwrap();
        assert_eq!(
            o.result.as_deref(),
            Some("task [redacted] of [redacted]; 43210 rows")
        );
        assert_eq!(o.error.as_deref(), Some("session [redacted] lost"));
    }

    #[test]
    fn protocol_error_becomes_terminal_failed_with_bounded_error() {
        let o = ProtocolError::Malformed("z".repeat(10_000)).into_observed();
        assert_eq!(o.status, RemoteStatus::Failed);
        assert!(o
            .error
            .as_ref()
            .unwrap()
            .starts_with("protocol error: malformed payload"));
        assert_eq!(o.error.unwrap().chars().count(), MAX_STORED_ERROR);
    }
}
