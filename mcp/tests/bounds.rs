//! Issue 22 item 4: a server that accepts TCP and never answers delays only calls to itself.
//! Item 5: one driver call (several requests) ends within the server's `call_deadline_ms`.

mod support;

use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::fake;
use tasklatch_core::ids::ServerId;
use tasklatch_core::ports::{Driver, DriverError};
use tasklatch_core::secret::{RemoteHandle, Secret};
use tasklatch_mcp::{McpConfig, McpDriver, Protocol, ServerConfig};

const TASK: &str = "task-bounds-0001";
const TIMEOUT_MS: u64 = 2_000;

fn handle() -> RemoteHandle {
    RemoteHandle {
        remote_task_id: Secret::new(TASK),
        driver_data: Secret::new(json!({"protocol": "extension"}).to_string()),
    }
}

fn two_servers(a: &str, b: &str) -> McpDriver {
    let mut config = McpConfig::default();
    for (id, url) in [("a", a), ("b", b)] {
        let mut server = ServerConfig::new(url).with_protocol(Protocol::Extension);
        server.request_timeout_ms = TIMEOUT_MS;
        config.servers.insert(id.into(), server);
    }
    McpDriver::new(config).expect("a valid configuration")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blackholed_server_does_not_stall_a_healthy_one() {
    let silent = fake::serve(Arc::new(|_, _| None)).await;
    let healthy = fake::serve(Arc::new(|method, request| {
        Some(match method {
            "server/discover" => fake::discover(request),
            _ => fake::result(request, fake::task(TASK, "working")),
        })
    }))
    .await;
    let d = two_servers(&silent, &healthy);
    let mut stalled = Vec::new();
    for _ in 0..5 {
        let d = d.clone();
        stalled.push(tokio::spawn(async move {
            d.get_status(&ServerId::from("a"), &handle()).await
        }));
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let started = Instant::now();
    let b = d.get_status(&ServerId::from("b"), &handle()).await;
    let took = started.elapsed();
    println!("server b answered in {took:?} while a was blackholed");
    assert!(b.is_ok(), "{b:?}");
    assert!(took < Duration::from_millis(TIMEOUT_MS), "{took:?}");
    for call in stalled {
        let outcome = call.await.expect("the call ran");
        assert!(
            matches!(outcome, Err(DriverError::Unavailable { .. })),
            "{outcome:?}"
        );
    }
}

/// An extension cancel is two requests (`tasks/cancel`, then `tasks/get`), each answered after
/// 700 ms — each within the 1 s request timeout, together past the 1 s call deadline.
#[tokio::test]
async fn a_call_of_several_requests_ends_within_its_deadline() {
    let slow = fake::serve_delayed(
        Arc::new(|method, request| {
            Some(match method {
                "server/discover" => fake::discover(request),
                "tasks/cancel" => fake::result(request, json!({})),
                _ => fake::result(request, fake::task(TASK, "cancelled")),
            })
        }),
        Arc::new(|method| match method {
            "tasks/cancel" | "tasks/get" => Duration::from_millis(700),
            _ => Duration::ZERO,
        }),
    )
    .await;
    let mut config = McpConfig::default();
    let mut server = ServerConfig::new(slow).with_protocol(Protocol::Extension);
    server.request_timeout_ms = 1_000;
    server.call_deadline_ms = Some(1_000);
    config.servers.insert("a".into(), server);
    let d = McpDriver::new(config).expect("a valid configuration");
    let started = Instant::now();
    let outcome = d.cancel(&ServerId::from("a"), &handle()).await;
    let took = started.elapsed();
    println!("a two-request cancel ended after {took:?}: {outcome:?}");
    assert!(
        matches!(outcome, Err(DriverError::Unavailable { .. })),
        "{outcome:?}"
    );
    assert!(took < Duration::from_millis(1_300), "{took:?}");
}
