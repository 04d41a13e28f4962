//! Issue 22 item 2: a transient answer while connecting never ends a healthy extension task,
//! and a brand-new `auto` server is not pinned to legacy for the process's life on one answer.

mod support;

use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use support::fake::{self, Answer};
use support::*;
use tasklatch_core::ports::{Driver, DriverError};
use tasklatch_core::secret::{RemoteHandle, Secret};
use tasklatch_mcp::Protocol;

const TASK: &str = "task-transient-0001";

fn extension_handle() -> RemoteHandle {
    RemoteHandle {
        remote_task_id: Secret::new(TASK),
        driver_data: Secret::new(json!({"protocol": "extension"}).to_string()),
    }
}

/// A server whose `server/discover` answers `discover`, and which knows the task as working.
async fn server_with_discover(discover: fn(&Value) -> Answer) -> String {
    fake::serve(Arc::new(move |method, request| {
        Some(match method {
            "server/discover" => discover(request),
            _ => fake::result(request, fake::task(TASK, "working")),
        })
    }))
    .await
}

async fn assert_unavailable_and_working(url: &str, what: &str) {
    let d = driver(url, Protocol::Extension);
    for _ in 0..3 {
        match d.get_status(&server(), &extension_handle()).await {
            Err(DriverError::Unavailable { .. }) => {}
            other => panic!("{what}: expected Unavailable (the task stays working), got {other:?}"),
        }
    }
}

#[tokio::test]
async fn a_503_with_an_internal_error_at_discover_leaves_the_task_working() {
    let url = server_with_discover(fake::internal_error).await;
    assert_unavailable_and_working(&url, "503 + -32603").await;
}

#[tokio::test]
async fn a_404_html_page_at_discover_leaves_the_task_working() {
    let url = server_with_discover(|_| fake::html_404()).await;
    assert_unavailable_and_working(&url, "404 text/html").await;
}

#[tokio::test]
async fn a_proxy_200_html_page_at_discover_leaves_the_task_working() {
    let url =
        server_with_discover(|_| (200, "text/html", b"<html>maintenance</html>".to_vec())).await;
    assert_unavailable_and_working(&url, "200 text/html").await;
}

/// A new `auto` server that is mid-deploy (every request answered by an HTML 404) is not
/// judged legacy for good: once it is back, the next submit uses the tasks extension.
#[tokio::test]
async fn a_new_auto_server_is_not_pinned_to_legacy_by_one_bad_answer() {
    let healthy = Arc::new(AtomicBool::new(false));
    let up = healthy.clone();
    let url = fake::serve(Arc::new(move |method, request| {
        if !up.load(Ordering::SeqCst) {
            return Some(fake::html_404());
        }
        Some(match method {
            "server/discover" => fake::discover(request),
            "tools/call" => {
                let mut created = fake::task(TASK, "working");
                created["resultType"] = json!("task");
                fake::result(request, created)
            }
            _ => fake::result(request, fake::task(TASK, "working")),
        })
    }))
    .await;
    let d = driver(&url, Protocol::Auto);
    let first = d.submit(&submit_request("slow", "{}")).await;
    assert!(first.is_err(), "a server answering 404 cannot take a task");
    healthy.store(true, Ordering::SeqCst);
    // A failed connect is remembered for 2 s (the negative cache); wait it out.
    tokio::time::sleep(std::time::Duration::from_millis(2_200)).await;
    let second = d
        .submit(&submit_request("slow", "{}"))
        .await
        .unwrap_or_else(|e| panic!("the healthy server must take the task: {e}"));
    assert!(second.handle.driver_data.expose().contains("extension"));
}
