//! The MCP server handler: `tools/list` shows the served tools; `tools/call` runs one in the
//! call's scope and counts it (`tasklatch_mcp_tool_calls_total`).
//!
//! A tool's refusal (no thread, not found, invalid, conflict, the store or a peer failing) is a
//! tool result with `isError` and the API's error body `{"error": "…"}`, which the model
//! reads; a tool that is not served (unknown, or a writing tool in read-only mode) is the
//! protocol's "invalid params" error, as for any tool a server does not have.

use super::calls;
use super::scope::scope_of;
use super::tools::ToolName;
use crate::api::{ApiError, AppState, ErrorBody, TaskService};
use crate::config::AgentTools;
use crate::metrics::ToolOutcome;
use axum::http::request::Parts;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use std::sync::Arc;

/// What the server tells clients when they connect.
const INSTRUCTIONS: &str = "Your background tasks in this conversation: list them, read one, \
     cancel one, answer a question one asks, start one. Changes are reported in this thread by \
     a new run; do not poll.";

/// The agent tools' MCP server; one per request (cheap: it shares everything).
pub struct ToolServer<T> {
    state: AppState<T>,
    config: Arc<AgentTools>,
}

impl<T> Clone for ToolServer<T> {
    fn clone(&self) -> Self {
        ToolServer {
            state: self.state.clone(),
            config: self.config.clone(),
        }
    }
}

impl<T: TaskService> ToolServer<T> {
    /// A server over the API's `state`, serving the tools `config` allows.
    pub fn new(state: AppState<T>, config: Arc<AgentTools>) -> Self {
        ToolServer { state, config }
    }

    /// The served tool called `name`, if any.
    fn served(&self, name: &str) -> Option<ToolName> {
        ToolName::of(name).filter(|t| !self.config.read_only || t.reads())
    }

    /// Runs `tool` in the scope of `parts`: its text, or the API's error.
    async fn run(
        &self,
        tool: ToolName,
        parts: Option<&Parts>,
        request: CallToolRequestParams,
    ) -> Result<String, ApiError> {
        let scope = scope_of(parts, &self.config.thread_header)?;
        let args = request.arguments.unwrap_or_default();
        calls::call(&self.state, scope, tool, args).await
    }
}

impl<T: TaskService> ServerHandler for ToolServer<T> {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                "tasklatch-agent-tools",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = ToolName::served(self.config.read_only)
            .map(ToolName::describe)
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let metrics = &self.state.metrics;
        let Some(tool) = self.served(&request.name) else {
            let label = ToolName::of(&request.name).map_or("unknown", ToolName::as_str);
            metrics.tool_called(label, ToolOutcome::Refused);
            return Err(ErrorData::invalid_params(
                "no such tool on this server",
                None,
            ));
        };
        let parts = context.extensions.get::<Parts>();
        let result = match self.run(tool, parts, request).await {
            Ok(text) => {
                metrics.tool_called(tool.as_str(), ToolOutcome::Ok);
                CallToolResult::success(vec![ContentBlock::text(text)])
            }
            Err(e) => {
                let outcome = if e.status().is_server_error() {
                    ToolOutcome::Error
                } else {
                    ToolOutcome::Refused
                };
                metrics.tool_called(tool.as_str(), outcome);
                let body = ErrorBody {
                    error: e.message().to_owned(),
                };
                let text = serde_json::to_string(&body).unwrap_or_default();
                CallToolResult::error(vec![ContentBlock::text(text)])
            }
        };
        Ok(result.into())
    }
}
