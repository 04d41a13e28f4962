//! What goes over the wire: the body of a notification run, and the parts of the server's
//! answers the launcher reads (run id, status, idempotency key). Answers are untrusted: a
//! field that is missing or malformed is an error, never a guess.
//!
//! **The hidden input.** A run's input is `{"messages": [M]}` with one human message `M`:
//! - `id`: `do-not-render-tasklatch-{key}` — the `do-not-render-` prefix is the one LangChain's
//!   Agent Chat UI already hides, and a message id that is a function of the key means a
//!   repeated key can only ever replace its own message in the thread's state, not add one;
//! - `content`: the notification prompt (trusted instruction, then the framed event);
//! - `additional_kwargs.tasklatch_notification: true` — the flag any other UI should test.
//!
//! **The run's metadata** carries `tasklatch_key` (the idempotency key, which the lookup
//! matches), and `tasklatch_task_id`, `tasklatch_event_version`, `tasklatch_attempt` parsed from
//! it. Nothing secret: the key names the public task id, never the remote handle.

use crate::ids::is_uuid;
use serde_json::{json, Map, Value};
use tasklatch_core::ids::RunId;
use tasklatch_core::ports::{RunRequest, RunStatus};

/// The message-id prefix chat UIs built on LangGraph's Agent Chat UI do not render.
pub const HIDDEN_ID_PREFIX: &str = "do-not-render-";
/// The `additional_kwargs` flag that marks a notification message.
pub const NOTIFICATION_FLAG: &str = "tasklatch_notification";
/// The run-metadata field holding the idempotency key.
pub const KEY_FIELD: &str = "tasklatch_key";

/// The id of the hidden message of the run for `key`.
pub fn message_id(key: &str) -> String {
    format!("{HIDDEN_ID_PREFIX}tasklatch-{key}")
}

/// The body of `POST /threads/{thread}/runs` for `req` on `assistant`: the hidden input, the
/// key in the metadata, `multitask_strategy: "reject"` (the server's default, `enqueue`, would
/// queue behind a busy thread instead of answering 409) and `if_not_exists: "reject"` (a
/// missing thread is an error, never created).
pub fn run_body(assistant: &str, req: &RunRequest) -> Value {
    json!({
        "assistant_id": assistant,
        "input": {
            "messages": [{
                "type": "human",
                "id": message_id(&req.key),
                "content": req.prompt,
                "additional_kwargs": { NOTIFICATION_FLAG: true },
            }]
        },
        "metadata": metadata(&req.key),
        "multitask_strategy": "reject",
        "if_not_exists": "reject",
    })
}

fn metadata(key: &str) -> Value {
    let mut m = Map::new();
    m.insert(KEY_FIELD.into(), key.into());
    if let Some((task, version, attempt)) = parse_key(key) {
        m.insert("tasklatch_task_id".into(), task.into());
        m.insert("tasklatch_event_version".into(), version.into());
        m.insert("tasklatch_attempt".into(), attempt.into());
    }
    Value::Object(m)
}

/// `task:{task_id}:{version}:{attempt}` → its parts (core's key format).
fn parse_key(key: &str) -> Option<(&str, u64, u64)> {
    let rest = key.strip_prefix("task:")?;
    let (rest, attempt) = rest.rsplit_once(':')?;
    let (task, version) = rest.rsplit_once(':')?;
    Some((task, version.parse().ok()?, attempt.parse().ok()?))
}

/// The server's run status names.
pub fn status_of(name: &str) -> Option<RunStatus> {
    Some(match name {
        "pending" => RunStatus::Pending,
        "running" => RunStatus::Running,
        "success" => RunStatus::Success,
        "error" => RunStatus::Error,
        "timeout" => RunStatus::Timeout,
        "interrupted" => RunStatus::Interrupted,
        _ => return None,
    })
}

/// A run as an answer describes it.
#[derive(Debug, PartialEq, Eq)]
pub struct WireRun {
    /// Its id (a UUID).
    pub run_id: RunId,
    /// Its thread, when the answer names one.
    pub thread_id: Option<String>,
    /// Its status, when the answer names a known one.
    pub status: Option<RunStatus>,
}

/// Reads one run object; `Err` says what is missing (no server text in it).
pub fn parse_run(body: &[u8]) -> Result<WireRun, &'static str> {
    let value: Value = serde_json::from_slice(body).map_err(|_| "the answer is not JSON")?;
    run_of(&value)
}

fn run_of(value: &Value) -> Result<WireRun, &'static str> {
    let obj = value.as_object().ok_or("the answer is not a run object")?;
    let run_id = obj
        .get("run_id")
        .and_then(Value::as_str)
        .filter(|id| is_uuid(id))
        .ok_or("the answer has no valid run id")?;
    Ok(WireRun {
        run_id: RunId(run_id.to_ascii_lowercase()),
        thread_id: obj
            .get("thread_id")
            .and_then(Value::as_str)
            .map(str::to_owned),
        status: obj
            .get("status")
            .and_then(Value::as_str)
            .and_then(status_of),
    })
}

/// A run holding the key, as a run list shows it: its creation time (the server's ISO 8601
/// text, compared as text — one server writes one format) and its id. Sorting these gives the
/// server's order: created_at, then run id.
pub type KeyedRun = (String, RunId);

/// One page of a thread's runs: its length, and every run holding `key` in its metadata.
/// `Err` when the page is not a list, or a run with the key has no valid id.
pub fn find_in_page(body: &[u8], key: &str) -> Result<(usize, Vec<KeyedRun>), &'static str> {
    let value: Value = serde_json::from_slice(body).map_err(|_| "the run list is not JSON")?;
    let runs = value.as_array().ok_or("the run list is not a list")?;
    let holds_key = |run: &Value| {
        run.get("metadata")
            .and_then(|m| m.get(KEY_FIELD))
            .and_then(Value::as_str)
            == Some(key)
    };
    let mut found = Vec::new();
    for run in runs.iter().filter(|r| holds_key(r)) {
        let id = run_of(run).map_err(|_| "the run with this key has no valid run id")?;
        let created = run
            .get("created_at")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        found.push((created, id.run_id));
    }
    Ok((runs.len(), found))
}

#[cfg(test)]
mod tests {
    use super::*;

    const RUN: &str = "01a23af8-b86b-71a5-886a-c3f01cdbaf4a";

    fn req() -> RunRequest {
        RunRequest {
            key: "task:tsk_ab12:3:1".into(),
            owner: "alice".into(),
            thread: "01a23af8-b726-7721-a5ff-495fd5f57d85".into(),
            prompt: "the prompt".into(),
        }
    }

    #[test]
    fn the_body_rejects_busy_and_missing_threads_and_hides_its_message() {
        let b = run_body("agent", &req());
        assert_eq!(b["assistant_id"], "agent");
        assert_eq!(b["multitask_strategy"], "reject");
        assert_eq!(b["if_not_exists"], "reject");
        let m = &b["input"]["messages"][0];
        assert_eq!(m["type"], "human");
        assert_eq!(m["id"], "do-not-render-tasklatch-task:tsk_ab12:3:1");
        assert_eq!(m["content"], "the prompt");
        assert_eq!(m["additional_kwargs"][NOTIFICATION_FLAG], true);
        assert_eq!(b["metadata"][KEY_FIELD], "task:tsk_ab12:3:1");
        assert_eq!(b["metadata"]["tasklatch_task_id"], "tsk_ab12");
        assert_eq!(b["metadata"]["tasklatch_event_version"], 3);
        assert_eq!(b["metadata"]["tasklatch_attempt"], 1);
        assert!(b.get("thread_id").is_none() && !b.to_string().contains("alice"));
    }

    #[test]
    fn a_key_of_another_shape_is_still_carried() {
        let r = RunRequest {
            key: "other".into(),
            ..req()
        };
        let b = run_body("agent", &r);
        assert_eq!(b["metadata"], json!({ KEY_FIELD: "other" }));
    }

    #[test]
    fn runs_need_a_uuid_run_id() {
        let ok = parse_run(format!(r#"{{"run_id":"{RUN}","status":"pending"}}"#).as_bytes());
        assert_eq!(
            ok.map(|r| (r.run_id, r.status)),
            Ok((RunId(RUN.into()), Some(RunStatus::Pending)))
        );
        for bad in [
            "<html>502</html>",
            "[]",
            r#"{"status":"pending"}"#,
            r#"{"run_id":5}"#,
            r#"{"run_id":"../x"}"#,
        ] {
            assert!(parse_run(bad.as_bytes()).is_err(), "{bad}");
        }
        let odd = parse_run(format!(r#"{{"run_id":"{RUN}","status":"queued"}}"#).as_bytes());
        assert_eq!(odd.map(|r| r.status), Ok(None));
    }

    #[test]
    fn every_run_with_the_key_is_found_with_its_creation_time() {
        let other = "01a23af8-b86b-71a5-886a-c3f01cdbaf4b";
        let page = format!(
            r#"[{{"run_id":"{other}","created_at":"2026-01-01T00:00:02+00:00","metadata":{{"tasklatch_key":"k"}}}},
                {{"run_id":"{RUN}","created_at":"2026-01-01T00:00:01+00:00","metadata":{{"tasklatch_key":"k"}}}}]"#
        );
        assert_eq!(
            find_in_page(page.as_bytes(), "k"),
            Ok((
                2,
                vec![
                    ("2026-01-01T00:00:02+00:00".into(), RunId(other.into())),
                    ("2026-01-01T00:00:01+00:00".into(), RunId(RUN.into())),
                ]
            ))
        );
    }

    #[test]
    fn a_page_is_searched_by_exact_key() {
        let page = format!(
            r#"[{{"run_id":"{RUN}","metadata":{{"tasklatch_key":"task:a:1:0"}}}},
                {{"run_id":"x","metadata":{{"tasklatch_key":"task:a:1:10"}}}},
                {{"run_id":"y"}}]"#
        );
        assert_eq!(
            find_in_page(page.as_bytes(), "task:a:1:0"),
            Ok((3, vec![(String::new(), RunId(RUN.into()))]))
        );
        assert_eq!(find_in_page(page.as_bytes(), "task:a:1:1"), Ok((3, vec![])));
        assert!(find_in_page(page.as_bytes(), "task:a:1:10").is_err());
        assert!(find_in_page(b"{}", "k").is_err());
    }
}
