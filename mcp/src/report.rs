//! From a server's task (either protocol) to core's [`RemoteReport`].
//!
//! The mapping, for both protocols:
//!
//! | server says | report |
//! |---|---|
//! | `working` | `working`, poll hint = `pollIntervalMs` (legacy: `pollInterval`) / 1000 |
//! | `input_required` | `input_required`, `input_request` = the questions, rendered ([`crate::questions`]) |
//! | `completed`, result `isError` false/absent | `completed`, `result` = the result's text |
//! | `completed`, result `isError: true` | `completed`, `result` = the result's text, `error` = "the tool reported an error: …" — the tool ran and failed; the task itself completed |
//! | `failed` (a JSON-RPC error) | `failed`, `error` = "the server failed the task: MESSAGE (JSON-RPC error CODE)" |
//! | `cancelled` | `cancelled` |
//! | not terminal, and `lastUpdatedAt` − `createdAt` > `ttlMs` | `failed`, `error` = "expired: …" |
//!
//! Expiry is judged on the server's clock (both timestamps are the server's; fastmcp moves
//! `lastUpdatedAt` on every `tasks/get`), never on ours. Unparseable timestamps skip the check.
//! `lastUpdatedAt` and `statusMessage` never reach the report: they change without the task
//! changing, and every change of a report is a new notification.
//!
//! Status strings are passed through as the server spelled them: an unknown one is refused by
//! core's `snapshot::validate`, as are a wrong task id and a bad poll hint.

use crate::redact::Redactor;
use chrono::DateTime;
use serde_json::{Map, Value};
use tasklatch_core::snapshot::RemoteReport;

/// Characters of the tool's own words quoted in an `isError` report's error.
const TOOL_ERROR_EXCERPT: usize = 300;
/// Characters of a server's failure message quoted in a `failed` report's error.
const FAILURE_MESSAGE: usize = 1_000;

/// The status-independent fields of a server's task, as untrusted values.
pub(crate) struct TaskFields<'a> {
    /// The server's id for the task.
    pub task_id: &'a str,
    /// The status as spelled by the server.
    pub status: &'a str,
    /// Creation time (server clock, RFC 3339).
    pub created_at: Option<&'a str>,
    /// Last update time (server clock, RFC 3339).
    pub last_updated_at: Option<&'a str>,
    /// Time to live from creation, in milliseconds.
    pub ttl_ms: Option<f64>,
    /// Suggested poll interval, in milliseconds.
    pub poll_interval_ms: Option<f64>,
}

/// What the task carries besides its fields.
pub(crate) enum Payload<'a> {
    /// Nothing (working, cancelled, or a status the driver does not know).
    None,
    /// The questions, already rendered.
    Questions(String),
    /// The `CallToolResult` object of a completed task.
    Result(&'a Map<String, Value>),
    /// The JSON-RPC error object of a failed task.
    Error(&'a Map<String, Value>),
}

/// Builds the report. `redactor` cuts the call's secrets out of every text taken from the
/// server (core's `validate` bounds the lengths afterwards).
pub(crate) fn report(fields: &TaskFields, payload: Payload, redactor: &Redactor) -> RemoteReport {
    let mut report = RemoteReport {
        task_id: fields.task_id.to_owned(),
        status: fields.status.to_owned(),
        poll_hint_secs: fields.poll_interval_ms.map(|ms| ms / 1000.0),
        ..RemoteReport::default()
    };
    if !is_terminal(fields.status) && expired(fields) {
        report.status = "failed".into();
        report.poll_hint_secs = None;
        report.error = Some(
            "expired: the task outlived its time to live on the server (ttlMs) without finishing"
                .into(),
        );
        return report;
    }
    match payload {
        Payload::None => {}
        Payload::Questions(text) => report.input_request = Some(text),
        Payload::Result(result) => {
            let (text, error) = tool_result(result, redactor);
            report.result = text;
            report.error = error;
        }
        Payload::Error(error) => report.error = Some(failure(error, redactor)),
    }
    report
}

fn is_terminal(status: &str) -> bool {
    matches!(status, "completed" | "failed" | "cancelled")
}

/// Whether the server's own clock says the task outlived its ttl.
fn expired(fields: &TaskFields) -> bool {
    let (Some(created), Some(updated), Some(ttl)) =
        (fields.created_at, fields.last_updated_at, fields.ttl_ms)
    else {
        return false;
    };
    let (Ok(created), Ok(updated)) = (
        DateTime::parse_from_rfc3339(created),
        DateTime::parse_from_rfc3339(updated),
    ) else {
        return false;
    };
    if !ttl.is_finite() || ttl < 0.0 {
        return false;
    }
    let age_ms = (updated - created).num_milliseconds() as f64;
    age_ms > ttl
}

/// The result's text and, when the tool reported an error, the error saying so.
///
/// The text is the result's `content` items in order (text items as their text, any other
/// item as its compact JSON), one per line; with no content, the `structuredContent` as
/// compact JSON; with neither, none.
fn tool_result(
    result: &Map<String, Value>,
    redactor: &Redactor,
) -> (Option<String>, Option<String>) {
    let mut parts = Vec::new();
    if let Some(Value::Array(items)) = result.get("content") {
        for item in items {
            match item.get("text").and_then(Value::as_str) {
                Some(text) if item.get("type").and_then(Value::as_str) == Some("text") => {
                    parts.push(text.to_owned())
                }
                _ => parts.push(item.to_string()),
            }
        }
    }
    if parts.is_empty() {
        if let Some(structured) = result.get("structuredContent") {
            parts.push(structured.to_string());
        }
    }
    let text = (!parts.is_empty()).then(|| redactor.clean(&parts.join("\n"), usize::MAX));
    let is_error = result.get("isError").and_then(Value::as_bool) == Some(true);
    let error = is_error.then(|| {
        let excerpt = text.as_deref().unwrap_or("(no message)");
        format!(
            "the tool reported an error: {}",
            redactor.clean(excerpt, TOOL_ERROR_EXCERPT)
        )
    });
    (text, error)
}

/// A failed task's error text.
fn failure(error: &Map<String, Value>, redactor: &Redactor) -> String {
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("(no message)");
    let code = match error.get("code") {
        Some(Value::Number(n)) => n.to_string(),
        _ => "?".into(),
    };
    format!(
        "the server failed the task: {} (JSON-RPC error {})",
        redactor.clean(message, FAILURE_MESSAGE),
        redactor.clean(&code, 20)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fields<'a>(status: &'a str, updated: &'a str) -> TaskFields<'a> {
        TaskFields {
            task_id: "t-1",
            status,
            created_at: Some("2026-12-03T08:00:00+00:00"),
            last_updated_at: Some(updated),
            ttl_ms: Some(60_000.0),
            poll_interval_ms: Some(200.0),
        }
    }

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn working_carries_the_hint_and_no_timestamps() {
        let r = report(
            &fields("working", "2026-12-03T08:00:30+00:00"),
            Payload::None,
            &Redactor::default(),
        );
        assert_eq!(r.status, "working");
        assert_eq!(r.poll_hint_secs, Some(0.2));
        assert_eq!((r.result, r.error, r.input_request), (None, None, None));
    }

    #[test]
    fn a_task_past_its_ttl_on_the_server_clock_is_failed_expired() {
        let r = report(
            &fields("working", "2026-12-03T08:01:00.001+00:00"),
            Payload::None,
            &Redactor::default(),
        );
        assert_eq!(r.status, "failed");
        assert!(r.error.unwrap().starts_with("expired"));
        // A terminal task is never expired; an unparseable clock skips the check.
        let done = obj(json!({"content": [{"type": "text", "text": "ok"}]}));
        let r = report(
            &fields("completed", "2026-12-03T09:00:00+00:00"),
            Payload::Result(&done),
            &Redactor::default(),
        );
        assert_eq!(r.status, "completed");
        let r = report(
            &fields("working", "yesterday"),
            Payload::None,
            &Redactor::default(),
        );
        assert_eq!(r.status, "working");
    }

    #[test]
    fn is_error_is_a_completed_task_whose_error_says_the_tool_failed() {
        let res = obj(
            json!({"content": [{"type": "text", "text": "boom in t-SECRET-9"}], "isError": true}),
        );
        let r = report(
            &fields("completed", "2026-12-03T08:00:01+00:00"),
            Payload::Result(&res),
            &Redactor::default().with("t-SECRET-9"),
        );
        assert_eq!(r.status, "completed");
        assert_eq!(r.result.as_deref(), Some("boom in [redacted]"));
        assert_eq!(
            r.error.as_deref(),
            Some("the tool reported an error: boom in [redacted]")
        );
    }

    #[test]
    fn result_text_prefers_content_then_structured_content() {
        let res = obj(
            json!({"content": [{"type": "text", "text": "a"}, {"type": "image", "data": "x", "mimeType": "image/png"}], "structuredContent": {"k": 1}}),
        );
        let (text, error) = tool_result(&res, &Redactor::default());
        assert_eq!(
            text.as_deref(),
            Some("a\n{\"data\":\"x\",\"mimeType\":\"image/png\",\"type\":\"image\"}")
        );
        assert_eq!(error, None);
        let res = obj(json!({"content": [], "structuredContent": {"k": 1}}));
        assert_eq!(
            tool_result(&res, &Redactor::default()).0.as_deref(),
            Some("{\"k\":1}")
        );
        assert_eq!(tool_result(&Map::new(), &Redactor::default()).0, None);
    }

    #[test]
    fn failed_quotes_the_bounded_message_and_code() {
        let e = obj(json!({"code": -32603, "message": "x".repeat(5000)}));
        let r = report(
            &fields("failed", "2026-12-03T08:00:01+00:00"),
            Payload::Error(&e),
            &Redactor::default(),
        );
        let error = r.error.unwrap();
        assert!(error.starts_with("the server failed the task: xxx"));
        assert!(error.ends_with("(JSON-RPC error -32603)"));
        assert!(error.chars().count() < 1_100);
    }
}
