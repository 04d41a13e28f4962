//! `McpDriver::with_connector`: every request of both protocols goes through the given
//! connector (the seam the simulation plugs its network into), one connection per request.

mod support;

use serde_json::json;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use support::fake;
use support::*;
use tasklatch_core::ports::Driver;
use tasklatch_core::secret::{RemoteHandle, Secret};
use tasklatch_http::http::Uri;
use tasklatch_http::{Connecting, Connector, TcpTls};
use tasklatch_mcp::{McpConfig, McpDriver, Protocol, ServerConfig};

const TASK: &str = "task-connector-0001";

/// TCP + rustls, counting the connections it opens.
struct Counting {
    inner: TcpTls,
    opened: Arc<AtomicU64>,
}

impl Connector for Counting {
    fn connect(&self, uri: Uri) -> Connecting {
        self.opened.fetch_add(1, Ordering::Relaxed);
        self.inner.connect(uri)
    }
}

#[tokio::test]
async fn every_extension_request_goes_through_the_given_connector() {
    let url = fake::serve(Arc::new(|method, request| {
        Some(match method {
            "server/discover" => fake::discover(request),
            _ => fake::result(request, fake::task(TASK, "working")),
        })
    }))
    .await;
    let opened = Arc::new(AtomicU64::new(0));
    let connector = Counting {
        inner: TcpTls::new(None).expect("TLS setup"),
        opened: opened.clone(),
    };
    let mut config = McpConfig::default();
    let server_config = ServerConfig::new(&url).with_protocol(Protocol::Extension);
    config.servers.insert(server().to_string(), server_config);
    let driver = McpDriver::with_connector(config, Arc::new(connector)).expect("valid");
    let handle = RemoteHandle {
        remote_task_id: Secret::new(TASK),
        driver_data: Secret::new(json!({"protocol": "extension"}).to_string()),
    };
    let report = driver
        .get_status(&server(), &handle)
        .await
        .expect("a report");
    assert_eq!(report.status, "working");
    let sent = driver.requests_sent();
    assert!(sent >= 2, "discover and tasks/get: {sent}");
    assert_eq!(
        opened.load(Ordering::Relaxed),
        sent,
        "one connection per request"
    );
    driver.close(std::time::Duration::from_secs(1)).await;
}
