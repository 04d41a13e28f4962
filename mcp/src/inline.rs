//! A tool call the server answered at once (no task): a task born completed. Core still needs a
//! handle, so the driver names it with a fresh local id (`inline-…`, unique per process and
//! time) that no server knows; the report carries the result, and there is nothing to poll.

use crate::driver_data::DriverData;
use crate::redact::Redactor;
use crate::report::{report, Payload, TaskFields};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};
use tasklatch_core::ports::Submitted;
use tasklatch_core::secret::{RemoteHandle, Secret};

/// A fresh id for an inline answer: 32 hex digits of a hash of the process, the time and a
/// counter.
fn fresh_id() -> String {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let seed = format!(
        "{}:{nanos}:{}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    );
    format!(
        "inline-{}",
        &hex::encode(Sha256::digest(seed.as_bytes()))[..32]
    )
}

/// The submission of an inline answer: `result` is the server's `CallToolResult` object.
pub(crate) fn completed(result: &Value, redactor: &Redactor) -> Submitted {
    let id = fresh_id();
    let fields = TaskFields {
        task_id: &id,
        status: "completed",
        created_at: None,
        last_updated_at: None,
        ttl_ms: None,
        poll_interval_ms: None,
    };
    let payload = match result.as_object() {
        Some(map) => Payload::Result(map),
        None => Payload::None,
    };
    let report = report(&fields, payload, redactor);
    Submitted {
        handle: RemoteHandle {
            remote_task_id: Secret::new(id),
            driver_data: Secret::new(DriverData::Inline.encode()),
        },
        report: Some(report),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_inline_answer_is_a_completed_task_with_a_fresh_id() {
        let r = json!({"content": [{"type": "text", "text": "quick: hi"}], "isError": false});
        let a = completed(&r, &Redactor::default());
        let b = completed(&r, &Redactor::default());
        assert_ne!(a.handle.remote_task_id, b.handle.remote_task_id);
        let report = a.report.unwrap();
        assert_eq!(report.task_id, a.handle.remote_task_id.expose());
        assert_eq!(
            (report.status.as_str(), report.result.as_deref()),
            ("completed", Some("quick: hi"))
        );
    }
}
