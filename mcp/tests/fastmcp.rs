//! The tasks extension (protocol 2026-07-28) against the real fastmcp 4.1.4, started by the
//! tests (`fixtures/servers/tasks_extension_app.py`).

mod support;

use serde_json::json;
use std::time::Duration;
use support::*;
use tasklatch_core::ports::{Driver, DriverError};
use tasklatch_core::secret::{RemoteHandle, Secret};
use tasklatch_core::snapshot::validate;
use tasklatch_mcp::Protocol;

const WITHIN: Duration = Duration::from_secs(20);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn submit_working_completed_raising_protocol_fault_inline_and_unknown() {
    let peer = start_fastmcp();
    let d = driver(&peer.url("/mcp"), Protocol::Auto);

    // A slow job: a task handle, its first report working, then completed with the result.
    let job = submit(&d, "slow_job", r#"{"steps": 3, "delay": 0.3}"#).await;
    let first = job.report.clone().expect("a first report");
    assert_eq!(first.status, "working");
    assert_eq!(first.poll_hint_secs, Some(0.2));
    validate(&first, &job.handle).expect("the first report is valid");
    let done = poll_until(&d, &job.handle, WITHIN, |r| r.status != "working").await;
    assert_eq!(done.status, "completed", "{done:?}");
    assert_eq!(
        done.result.as_deref(),
        Some(r#"{"steps":3,"status":"done"}"#)
    );
    assert_eq!(done.error, None);
    // Re-polling a finished task gives the same report although lastUpdatedAt moved.
    let again = d.get_status(&server(), &job.handle).await.unwrap();
    assert_eq!(again, done, "a re-poll must not change the report");

    // A raising tool: completed, its error saying the tool failed.
    let raising = submit(&d, "fails_tool", r#"{"reason": "disk on fire"}"#).await;
    let r = poll_until(&d, &raising.handle, WITHIN, |r| r.status != "working").await;
    assert_eq!(r.status, "completed");
    let error = r.error.expect("an error saying the tool failed");
    assert!(
        error.starts_with("the tool reported an error:") && error.contains("disk on fire"),
        "{error}"
    );

    // A protocol error: failed with a bounded error.
    let fault = submit(
        &d,
        "protocol_fault",
        &json!({"reason": "x".repeat(20_000)}).to_string(),
    )
    .await;
    let r = poll_until(&d, &fault.handle, WITHIN, |r| r.status != "working").await;
    assert_eq!(r.status, "failed");
    let error = r.error.unwrap();
    assert!(
        error.starts_with("the server failed the task: xxx")
            && error.ends_with("(JSON-RPC error -32603)"),
        "{error}"
    );
    assert!(
        error.chars().count() < 1_200,
        "bounded: {}",
        error.chars().count()
    );
    assert!(!error.contains(fault.handle.remote_task_id.expose()));

    // A tool without task support answers inline: a task born completed.
    let quick = submit(&d, "quick", r#"{"text": "hello"}"#).await;
    let r = quick.report.clone().unwrap();
    assert_eq!(
        (r.status.as_str(), r.result.as_deref()),
        ("completed", Some("quick: hello"))
    );
    validate(&r, &quick.handle).expect("valid");

    // An unknown id: UnknownTask (core ends the task failed, once).
    let unknown = RemoteHandle {
        remote_task_id: Secret::new("no-such-task-123456"),
        driver_data: job.handle.driver_data.clone(),
    };
    assert_eq!(
        d.get_status(&server(), &unknown).await,
        Err(DriverError::UnknownTask)
    );
    assert_eq!(
        d.cancel(&server(), &unknown).await,
        Err(DriverError::UnknownTask)
    );

    // Arguments that are not a JSON object are refused before anything is sent.
    let before = d.requests_sent();
    let e = d
        .submit(&submit_request("slow_job", "[1, 2]"))
        .await
        .unwrap_err();
    assert!(matches!(e, DriverError::Rejected(_)), "{e:?}");
    assert_eq!(d.requests_sent(), before);
    // fastmcp answers an unknown tool inline with an isError result: a task born completed
    // whose error says the tool failed.
    let unknown_tool = submit(&d, "no_such_tool", "{}").await;
    let r = unknown_tool.report.unwrap();
    assert_eq!(r.status, "completed");
    assert!(r.error.unwrap().contains("Unknown tool"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_and_answer_input_required() {
    let peer = start_fastmcp();
    let d = driver(&peer.url("/mcp"), Protocol::Extension);

    let long = submit(&d, "forever", "{}").await;
    poll_until(&d, &long.handle, WITHIN, |r| r.status == "working").await;
    let r = d.cancel(&server(), &long.handle).await.expect("cancel");
    let r = if r.status == "cancelled" {
        r
    } else {
        poll_until(&d, &long.handle, WITHIN, |r| r.status != "working").await
    };
    assert_eq!(r.status, "cancelled");

    let ask = submit(&d, "ask_user", r#"{"question": "Which colour?"}"#).await;
    let asked = poll_until(&d, &ask.handle, WITHIN, |r| r.status != "working").await;
    assert_eq!(asked.status, "input_required", "{asked:?}");
    let text = asked.input_request.clone().unwrap();
    assert!(text.contains("Which colour? (fields: colour)"), "{text}");
    assert!(
        !text.contains(ask.handle.remote_task_id.expose()),
        "the server key must not show: {text}"
    );
    validate(&asked, &ask.handle).expect("valid");
    // Stable across polls (fastmcp moves lastUpdatedAt every time).
    assert_eq!(d.get_status(&server(), &ask.handle).await.unwrap(), asked);

    let question = text
        .split('[')
        .nth(1)
        .and_then(|s| s.split(']').next())
        .expect("a question id")
        .to_owned();
    let answer = json!({"action": "accept", "content": {"colour": "teal"}});
    // A question the task does not ask, or a malformed answer, is refused and nothing is sent.
    let e = d
        .answer(&server(), &ask.handle, "q0000000000000000", &answer)
        .await
        .unwrap_err();
    assert!(
        matches!(e, DriverError::Rejected(ref m) if m.contains("does not ask this question")),
        "{e:?}"
    );
    let e = d
        .answer(&server(), &ask.handle, &question, &json!("teal"))
        .await
        .unwrap_err();
    assert!(matches!(e, DriverError::Rejected(_)), "{e:?}");

    d.answer(&server(), &ask.handle, &question, &answer)
        .await
        .expect("answer");
    let done = poll_until(&d, &ask.handle, WITHIN, |r| r.status == "completed").await;
    let result = done.result.unwrap();
    assert!(
        result.contains("teal") && result.contains("accept"),
        "{result}"
    );
    // The task no longer asks: a second answer is refused.
    let e = d
        .answer(&server(), &ask.handle, &question, &answer)
        .await
        .unwrap_err();
    assert!(
        matches!(e, DriverError::Rejected(ref m) if m.contains("does not ask for input")),
        "{e:?}"
    );
}
