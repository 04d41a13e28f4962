//! Legacy tasks (protocol 2025-11-25) against the real server-everything 2026.8.31, started by
//! the tests.

mod support;

use std::time::Duration;
use support::*;
use tasklatch_core::ports::Driver;
use tasklatch_core::snapshot::validate;
use tasklatch_mcp::{Protocol, SESSION_LOST};

const WITHIN: Duration = Duration::from_secs(30);
const QUERY: &str = "simulate-research-query";

fn protocol_of(submitted: &tasklatch_core::ports::Submitted) -> String {
    let data: serde_json::Value =
        serde_json::from_str(submitted.handle.driver_data.expose()).expect("driver data is JSON");
    data["protocol"].as_str().unwrap_or_default().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn research_query_completes_with_its_result_through_auto() {
    let peer = start_everything();
    // auto: server/discover is refused as a legacy server refuses it, so the driver falls back
    // to initialize.
    let d = driver(&peer.url("/mcp"), Protocol::Auto);
    let job = submit(&d, QUERY, r#"{"topic": "durable notifications"}"#).await;
    assert_eq!(protocol_of(&job), "legacy");
    let first = job.report.clone().unwrap();
    assert_eq!(first.status, "working");
    assert_eq!(first.poll_hint_secs, Some(1.0));
    validate(&first, &job.handle).expect("valid");
    let done = poll_until(&d, &job.handle, WITHIN, |r| r.status != "working").await;
    assert_eq!(done.status, "completed", "{done:?}");
    let result = done.result.clone().unwrap();
    assert!(
        result.contains("Research Report: durable notifications"),
        "{result}"
    );
    validate(&done, &job.handle).expect("valid");
    // Re-polling a finished task gives the same report.
    assert_eq!(d.get_status(&server(), &job.handle).await.unwrap(), done);
    // The second submit goes straight to legacy: no second discover.
    let before = d.requests_sent();
    let second = submit(&d, QUERY, r#"{"topic": "x"}"#).await;
    assert_eq!(protocol_of(&second), "legacy");
    assert_eq!(
        d.requests_sent() - before,
        3,
        "initialize, initialized, tools/call"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_and_a_second_cancel_of_a_finished_task() {
    let peer = start_everything();
    let d = driver(&peer.url("/mcp"), Protocol::Legacy);
    let job = submit(&d, QUERY, r#"{"topic": "cancel me"}"#).await;
    let r = d.cancel(&server(), &job.handle).await.expect("cancel");
    assert_eq!(r.status, "cancelled", "{r:?}");
    validate(&r, &job.handle).expect("valid");
    // The server refuses a second cancel (-32602, terminal): the driver reads the end instead.
    let again = d
        .cancel(&server(), &job.handle)
        .await
        .expect("second cancel");
    assert_eq!(again.status, "cancelled");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_restart_loses_the_session_and_the_task_fails_with_that_reason() {
    let mut peer = start_everything();
    let d = driver(&peer.url("/mcp"), Protocol::Legacy);
    let job = submit(&d, QUERY, r#"{"topic": "lost"}"#).await;
    peer.restart().unwrap_or_else(|e| panic!("restart: {e}"));
    let before = d.requests_sent();
    let r = d
        .get_status(&server(), &job.handle)
        .await
        .expect("a report");
    assert_eq!(d.requests_sent() - before, 1, "one request, no retry");
    assert_eq!(
        (r.status.as_str(), r.error.as_deref()),
        ("failed", Some(SESSION_LOST))
    );
    validate(&r, &job.handle).expect("valid");
    let session: serde_json::Value = serde_json::from_str(job.handle.driver_data.expose()).unwrap();
    let session = session["session"].as_str().unwrap();
    assert!(!format!("{r:?}").contains(session));
}
