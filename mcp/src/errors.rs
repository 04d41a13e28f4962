//! How failures of either protocol become core's [`DriverError`]s. One policy for both:
//!
//! - no answer in time, no connection, HTTP 429 or 5xx, JSON-RPC internal/server errors →
//!   `Unavailable` (core retries with backoff; tracking degrades after 3);
//! - JSON-RPC `-32602` (invalid params) on a `tasks/*` request → `UnknownTask` (both servers
//!   answer it for a task they do not know; core ends the task failed, once);
//! - an answer that cannot be decoded or is over the size limit → `Malformed` (core ends the
//!   task failed with the bounded reason: a server that breaks the protocol is not retried
//!   forever);
//! - any other refusal (4xx, other JSON-RPC errors) → `Rejected`.
//!
//! Texts are fixed phrases plus, at most, the server's own bounded and redacted message.

use crate::redact::Redactor;
use std::time::Duration;
use tasklatch_core::ports::DriverError;
use tasklatch_core::task::ErrorClass;
use tasklatch_http::HttpError;

/// Characters of a server's error message quoted in a driver error.
pub(crate) const SERVER_MESSAGE_MAX: usize = 300;

/// JSON-RPC "invalid params": what both servers answer for an unknown task id.
pub(crate) const INVALID_PARAMS: i64 = -32602;

/// A transient failure.
pub(crate) fn unavailable(class: ErrorClass, message: impl Into<String>) -> DriverError {
    DriverError::Unavailable {
        class,
        message: message.into(),
    }
}

/// The call did not finish within the request timeout.
pub(crate) fn timed_out(timeout: Duration) -> DriverError {
    unavailable(
        ErrorClass::Timeout,
        format!("no complete answer within {} ms", timeout.as_millis()),
    )
}

/// The answer was over the byte limit; reading stopped there.
pub(crate) fn too_large(limit: usize) -> DriverError {
    DriverError::Malformed(format!(
        "the answer is larger than {limit} bytes (max_response_bytes); reading stopped there"
    ))
}

/// An HTTP status that is not a usable answer.
pub(crate) fn http_status(status: u16) -> DriverError {
    match status {
        429 => unavailable(
            ErrorClass::RateLimited,
            "HTTP 429: the server asks to slow down",
        ),
        500..=599 => unavailable(ErrorClass::Server, format!("HTTP {status} from the server")),
        401 | 403 => DriverError::Rejected(format!(
            "HTTP {status}: the server refused the credentials (check the configured headers)"
        )),
        _ => DriverError::Rejected(format!("HTTP {status} from the server")),
    }
}

/// A failure of the HTTP client before the answer's head arrived (never quotes the URL or the
/// request).
pub(crate) fn http_client(error: &HttpError, timeout: Duration) -> DriverError {
    match error {
        HttpError::Timeout => timed_out(timeout),
        HttpError::Connect(_) => {
            unavailable(ErrorClass::Connection, "could not connect to the server")
        }
        HttpError::TooLarge(limit) => too_large(*limit),
        HttpError::Transport(_) => unavailable(
            ErrorClass::Connection,
            "the request failed before an answer arrived",
        ),
    }
}

/// A failure of the HTTP client while the answer's body was read.
pub(crate) fn http_body(error: &HttpError, timeout: Duration) -> DriverError {
    match error {
        HttpError::Transport(_) => unavailable(
            ErrorClass::Connection,
            "the connection failed while reading the answer",
        ),
        other => http_client(other, timeout),
    }
}

/// A JSON-RPC error the server answered to `method`.
pub(crate) fn json_rpc(method: &str, code: i64, message: &str, redactor: &Redactor) -> DriverError {
    if code == INVALID_PARAMS && method.starts_with("tasks/") {
        return DriverError::UnknownTask;
    }
    let text = format!(
        "{method}: JSON-RPC error {code}: {}",
        redactor.clean(message, SERVER_MESSAGE_MAX)
    );
    match code {
        -32603 | -32099..=-32000 => unavailable(ErrorClass::Server, text),
        _ => DriverError::Rejected(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_params_on_a_task_is_an_unknown_task_but_not_on_a_tool_call() {
        let r = Redactor::default();
        assert_eq!(
            json_rpc("tasks/get", -32602, "Task x not found", &r),
            DriverError::UnknownTask
        );
        assert!(matches!(
            json_rpc("tools/call", -32602, "bad", &r),
            DriverError::Rejected(_)
        ));
        assert!(matches!(
            json_rpc("tasks/get", -32603, "oops", &r),
            DriverError::Unavailable {
                class: ErrorClass::Server,
                ..
            }
        ));
    }

    #[test]
    fn statuses_are_classified() {
        assert!(matches!(
            http_status(429),
            DriverError::Unavailable {
                class: ErrorClass::RateLimited,
                ..
            }
        ));
        assert!(matches!(
            http_status(503),
            DriverError::Unavailable {
                class: ErrorClass::Server,
                ..
            }
        ));
        assert!(matches!(http_status(401), DriverError::Rejected(_)));
    }
}
