//! The tasks extension (SEP-2663, protocol 2026-07-28) through rmcp 3.11.0's client.
//!
//! One rmcp client per server, opened with the `Discover` lifecycle (a `server/discover`
//! probe; no session — every later request stands alone) and kept for every task of that
//! server. A client whose transport closed is dropped and opened again on the next call, so a
//! server restart costs one `server/discover`, never a loop. Each server has its own slot
//! ([`connections`]): a slow or blackholed server never delays calls to another, and a failed
//! connect is remembered for 2 s. Every call is bounded by the server's request timeout; the
//! transport ([`transport`], over the crate's one HTTP client) enforces the byte limit while
//! reading.

mod calls;
mod connections;
mod errors;
mod events;
mod transport;

pub(crate) use calls::{answer, cancel, get_status, submit};
pub(crate) use connections::Connections;

use crate::server::Server;
use errors::connect_error;
use rmcp::model::{
    ClientCapabilities, ClientConfig, Implementation, JsonObject, ProtocolVersion,
    TASKS_EXTENSION_ID,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RoleClient, RunningService};
use rmcp::transport::common::client_side_sse::NeverRetry;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use std::collections::HashMap;
use std::sync::Arc;
use tasklatch_core::ports::DriverError;
use transport::Transport;

/// The largest diagnostic body of an HTTP error rmcp reads.
const MAX_ERROR_BODY: usize = 16 << 10;
/// Concurrent requests per server through one client.
const MAX_CONCURRENT_REQUESTS: usize = 16;

/// An open rmcp client.
pub(crate) type Conn = RunningService<RoleClient, ClientConfig>;

/// Why no extension client could be opened.
#[derive(Clone)]
pub(crate) enum ConnectError {
    /// The server answered `server/discover` as a legacy server does.
    NotExtension,
    /// Anything else.
    Failed(DriverError),
}

/// Opens a client: `server/discover` within the request timeout.
async fn connect(server: &Server) -> Result<Conn, ConnectError> {
    let headers: HashMap<_, _> = server.headers.iter().cloned().collect();
    let mut config = StreamableHttpClientTransportConfig::with_uri(server.config.url.as_str())
        .custom_headers(headers)
        .max_json_response_size(server.limit())
        .max_sse_event_size(server.limit())
        .max_error_response_size(server.limit().min(MAX_ERROR_BODY))
        .max_concurrent_requests(MAX_CONCURRENT_REQUESTS)
        .reinit_on_expired_session(false);
    config.retry_config = Arc::new(NeverRetry::default());
    let transport = StreamableHttpClientTransport::<Transport>::with_client(
        Transport(server.http.clone()),
        config,
    );
    let mut capabilities = ClientCapabilities::default();
    capabilities
        .extensions
        .get_or_insert_with(Default::default)
        .insert(TASKS_EXTENSION_ID.to_owned(), JsonObject::new());
    let info = ClientConfig::new(
        capabilities,
        Implementation::new("tasklatch", env!("CARGO_PKG_VERSION")),
    );
    let lifecycle = ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    match tokio::time::timeout(
        server.timeout(),
        info.serve_with_lifecycle(transport, lifecycle),
    )
    .await
    {
        Ok(Ok(conn)) => Ok(conn),
        Ok(Err(e)) => Err(connect_error(e, server)),
        Err(_) => Err(ConnectError::Failed(crate::errors::timed_out(
            server.timeout(),
        ))),
    }
}
