//! Agent tools over MCP: the agent itself lists, reads, cancels, answers and starts its
//! background tasks, at `/mcp` on the API's listener (`[agent_tools] enabled = true`).
//!
//! | tool | what | API call it makes |
//! |---|---|---|
//! | `list_background_tasks` | the thread's tasks, newest first | `GET /v1/threads/{thread}/tasks` |
//! | `get_background_task` | one task's detail | `GET …/tasks/{task}` |
//! | `cancel_background_task` | cancel by id, by exact name, or the thread's one running task | `POST …/tasks/{task}/cancel`, `POST …/cancel` |
//! | `answer_background_task` | answer a question of an `input_required` task | `POST …/tasks/{task}/answer` |
//! | `start_background_task` | start a durable task (server, tool, arguments, name) | `POST /v1/threads/{thread}/tasks` |
//!
//! - **Who and where** ([`scope`]): the owner comes from the same credentials as the API; the
//!   thread comes from a header the agent runtime sets per run (`agent_tools.thread_header`),
//!   never from a tool argument — no tool has one. So every call is scoped to (owner, thread)
//!   exactly like the API's, and a start goes through the API's thread-ownership guard.
//! - **One implementation** ([`calls`]): each tool calls the API's own function for the same
//!   request, so its checks, store calls, errors and public shapes are the API's; every text
//!   a tool returns is the API's public, neutralised JSON body.
//! - **What is listed** ([`tools`]): read-only and destructive hints; descriptions that say
//!   earlier statuses are stale and changes come to the thread as a new run (do not poll);
//!   read-only mode (`agent_tools.read_only`) lists and serves only the reading tools.
//! - **Transport**: rmcp's streamable HTTP server, stateless, JSON answers; request bodies
//!   bounded by `http.max_body_bytes`; the `Host` header checked against
//!   `AgentTools::allowed_hosts` (loopback, the listen address, the configured names; see
//!   `config::AgentTools`), else 403. Requests count towards `http.max_in_flight` like any.
//! - **Metrics**: `tasklatch_mcp_tool_calls_total{tool,outcome}`.

mod calls;
pub mod scope;
mod server;
pub mod tools;

use crate::api::{AppState, TaskService};
use crate::config::AgentTools;
use axum::middleware;
use axum::Router;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use server::ToolServer;
use std::sync::Arc;
use tools::ToolName;

/// The route `/mcp` serving the agent tools `config` allows over the API's `state`, behind
/// the API's authentication, with request bodies of at most `max_body_bytes`. Creates the
/// tools' metric series at 0.
pub fn route<T: TaskService>(
    state: &AppState<T>,
    config: Arc<AgentTools>,
    max_body_bytes: usize,
) -> Router<AppState<T>> {
    let transport = StreamableHttpServerConfig::default()
        .with_allowed_hosts(config.allowed_hosts.clone())
        .with_max_request_body_bytes(max_body_bytes)
        .with_legacy_session_mode(false)
        .with_json_response(true);
    state
        .metrics
        .agent_tools(&ToolName::ALL.map(ToolName::as_str));
    let server = ToolServer::new(state.clone(), config);
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(NeverSessionManager::default()),
        transport,
    );
    Router::new()
        .route_service("/mcp", service)
        .route_layer(middleware::from_fn_with_state(
            state.auth.clone(),
            scope::authenticate,
        ))
}
