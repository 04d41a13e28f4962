//! [`McpDriver`]: one [`Driver`] for many MCP servers, routed by the task's server id.

use crate::config::{ConfigError, McpConfig};
use crate::driver_data::DriverData;
use crate::extension::{self, Connections};
use crate::legacy;
use crate::server::{Server, Speaks};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tasklatch_core::ids::ServerId;
use tasklatch_core::ports::{Driver, DriverError, SubmitRequest, Submitted};
use tasklatch_core::secret::{RemoteHandle, Secret};
use tasklatch_core::snapshot::RemoteReport;

/// Bytes of a tool call's arguments, at most.
pub const MAX_ARGUMENTS_BYTES: usize = 256 << 10;
/// Bytes of an answer to a question, at most.
pub const MAX_ANSWER_BYTES: usize = 64 << 10;

/// The MCP tasks driver: the tasks extension (2026-07-28) on rmcp and legacy tasks
/// (2025-11-25), per server as configured. Every task keeps the protocol it was created with
/// (in its driver data). Clones share everything (clients, counters): one driver serves all the
/// engine lanes of a worker.
#[derive(Clone)]
pub struct McpDriver {
    inner: Arc<Inner>,
}

struct Inner {
    servers: BTreeMap<ServerId, Server>,
    connections: Connections,
    sent: Arc<AtomicU64>,
}

impl McpDriver {
    /// Closes the open extension clients, each within `within` (call once no call is in
    /// flight, before the runtime stops); a later call opens them again.
    pub async fn close(&self, within: std::time::Duration) {
        self.inner.connections.close_all(within).await;
    }

    /// A driver for the servers of `config` (validated here), over TCP + rustls.
    pub fn new(config: McpConfig) -> Result<Self, ConfigError> {
        Self::build(config, None)
    }

    /// As [`Self::new`], with every request to every server sent through `connector` (the
    /// simulation's network, for one).
    pub fn with_connector(
        config: McpConfig,
        connector: Arc<dyn tasklatch_http::Connector>,
    ) -> Result<Self, ConfigError> {
        Self::build(config, Some(connector))
    }

    fn build(
        config: McpConfig,
        connector: Option<Arc<dyn tasklatch_http::Connector>>,
    ) -> Result<Self, ConfigError> {
        config.validate()?;
        let sent = Arc::new(AtomicU64::new(0));
        let mut servers = BTreeMap::new();
        for (id, server) in config.servers {
            let built = Server::new(
                ServerId::from(id.as_str()),
                server,
                sent.clone(),
                connector.clone(),
            )
            .map_err(|reason| ConfigError {
                server: id.clone(),
                field: "headers".into(),
                reason,
            })?;
            servers.insert(ServerId::from(id), built);
        }
        Ok(McpDriver {
            inner: Arc::new(Inner {
                servers,
                connections: Connections::default(),
                sent,
            }),
        })
    }

    /// HTTP requests sent so far, to every server, by both protocols.
    pub fn requests_sent(&self) -> u64 {
        self.inner.sent.load(Ordering::Relaxed)
    }

    /// Answers the question `question_id` (a public id from the task's `input_request`) of an
    /// `input_required` task with `response` — the client's result for that request, e.g.
    /// `{"action": "accept", "content": {...}}` for an elicitation.
    ///
    /// The server keys of the questions embed the remote task id and are never shown, and a
    /// server silently ignores an answer under a wrong key; so the driver reads the task's
    /// current questions again (`tasks/get`), finds the one whose public id matches, and sends
    /// `tasks/update` under its server key. An answer to a task that does not ask for input
    /// now, or to a question it does not ask, is refused (`Rejected`) and nothing is sent.
    /// Tasks extension only: legacy tasks are refused.
    pub async fn answer(
        &self,
        server: &ServerId,
        handle: &RemoteHandle,
        question_id: &str,
        response: &Value,
    ) -> Result<(), DriverError> {
        let server = self.server(server)?;
        if !response.is_object() || response.to_string().len() > MAX_ANSWER_BYTES {
            return Err(DriverError::Rejected(format!(
                "an answer must be a JSON object of at most {MAX_ANSWER_BYTES} bytes"
            )));
        }
        let remote_id = handle.remote_task_id.expose();
        match DriverData::decode(handle.driver_data.expose())? {
            DriverData::Extension => {
                let call = extension::answer(
                    &self.inner.connections,
                    server,
                    remote_id,
                    question_id,
                    response,
                );
                within_deadline(server, call).await
            }
            DriverData::Legacy { .. } => Err(DriverError::Rejected(
                "answering is not supported for legacy (2025-11-25) tasks".into(),
            )),
            DriverData::Inline => Err(DriverError::Rejected(
                "the task does not ask for input now".into(),
            )),
        }
    }

    fn server(&self, id: &ServerId) -> Result<&Server, DriverError> {
        self.inner
            .servers
            .get(id)
            .ok_or_else(|| DriverError::Rejected(format!("no MCP server `{id}` is configured")))
    }

    /// `tools/call` in the protocol the server speaks. `auto` tries the extension; only when
    /// `server/discover` answered as a non-extension server does it try legacy, and legacy is
    /// remembered only once a legacy submit worked, for [`crate::server::LEGACY_VERDICT_TTL`]
    /// (one bad answer during a deploy never pins a server to legacy).
    async fn submit_to(
        &self,
        server: &Server,
        tool: &str,
        arguments: Map<String, Value>,
    ) -> Result<Submitted, DriverError> {
        match server.speaks().await {
            Some(Speaks::Legacy) => legacy::submit(server, tool, arguments).await,
            Some(Speaks::Extension) => {
                extension::submit(&self.inner.connections, server, tool, arguments)
                    .await
                    .map_err(|e| {
                        e.unwrap_or_else(|| {
                            DriverError::Rejected(
                                "the server does not speak the tasks extension".into(),
                            )
                        })
                    })
            }
            None => self.probe(server, tool, arguments).await,
        }
    }

    /// `auto`'s submit to a server not judged yet (or whose legacy verdict expired).
    async fn probe(
        &self,
        server: &Server,
        tool: &str,
        arguments: Map<String, Value>,
    ) -> Result<Submitted, DriverError> {
        match extension::submit(&self.inner.connections, server, tool, arguments.clone()).await {
            Ok(submitted) => {
                server.found(Speaks::Extension).await;
                Ok(submitted)
            }
            Err(None) => {
                tracing::debug!(server = %server.id, "no tasks extension: trying legacy tasks");
                let submitted = legacy::submit(server, tool, arguments).await?;
                server.found(Speaks::Legacy).await;
                Ok(submitted)
            }
            Err(Some(e)) => Err(e),
        }
    }
}

/// The caller's arguments: a JSON object of bounded size, or `Rejected`.
fn arguments(text: &str) -> Result<Map<String, Value>, DriverError> {
    if text.len() > MAX_ARGUMENTS_BYTES {
        return Err(DriverError::Rejected(format!(
            "tool arguments larger than {MAX_ARGUMENTS_BYTES} bytes"
        )));
    }
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Ok(map),
        _ => Err(DriverError::Rejected(
            "tool arguments must be a JSON object".into(),
        )),
    }
}

impl Driver for McpDriver {
    async fn submit(&self, req: &SubmitRequest) -> Result<Submitted, DriverError> {
        let server = self.server(&req.server)?;
        let arguments = arguments(&req.arguments)?;
        tracing::debug!(server = %server.id, tool = %req.tool, "mcp submit");
        within_deadline(server, self.submit_to(server, &req.tool, arguments)).await
    }

    async fn get_status(
        &self,
        server: &ServerId,
        handle: &RemoteHandle,
    ) -> Result<RemoteReport, DriverError> {
        let server = self.server(server)?;
        let remote_id = handle.remote_task_id.expose();
        let call = async {
            match DriverData::decode(handle.driver_data.expose())? {
                DriverData::Extension => {
                    extension::get_status(&self.inner.connections, server, remote_id).await
                }
                DriverData::Legacy { session } => {
                    legacy::get_status(server, remote_id, &session).await
                }
                DriverData::Inline => Err(inline_task()),
            }
        };
        within_deadline(server, call).await
    }

    async fn cancel(
        &self,
        server: &ServerId,
        handle: &RemoteHandle,
    ) -> Result<RemoteReport, DriverError> {
        let server = self.server(server)?;
        let remote_id = handle.remote_task_id.expose();
        let call = async {
            match DriverData::decode(handle.driver_data.expose())? {
                DriverData::Extension => {
                    extension::cancel(&self.inner.connections, server, remote_id).await
                }
                DriverData::Legacy { session } => legacy::cancel(server, remote_id, &session).await,
                DriverData::Inline => Err(inline_task()),
            }
        };
        within_deadline(server, call).await
    }

    /// The port's answer: `answer` must be the JSON object the client returns for the question
    /// (for an elicitation, `{"action": "accept", "content": {...}}`); anything else is
    /// `Rejected` before anything is sent. Then as [`McpDriver::answer`] (inherent): the task's
    /// questions are read again and `tasks/update` is sent under the question's server key.
    /// Error texts never quote the answer.
    async fn answer(
        &self,
        server: &ServerId,
        handle: &RemoteHandle,
        request_id: &str,
        answer: &Secret,
    ) -> Result<(), DriverError> {
        let text = answer.expose();
        if text.len() > MAX_ANSWER_BYTES {
            return Err(DriverError::Rejected(format!(
                "an answer must be a JSON object of at most {MAX_ANSWER_BYTES} bytes"
            )));
        }
        let Ok(response @ Value::Object(_)) = serde_json::from_str::<Value>(text) else {
            return Err(DriverError::Rejected(
                "an answer must be a JSON object (e.g. {\"action\": \"accept\", \"content\": {...}})"
                    .into(),
            ));
        };
        McpDriver::answer(self, server, handle, request_id, &response).await
    }
}

/// Runs one driver call (all its requests, connect included) within the server's call
/// deadline; past it the call is dropped and answers `Unavailable` (timeout).
async fn within_deadline<T>(
    server: &Server,
    call: impl std::future::Future<Output = Result<T, DriverError>>,
) -> Result<T, DriverError> {
    let deadline = server.config.call_deadline();
    tokio::time::timeout(deadline, call)
        .await
        .unwrap_or_else(|_| Err(call_timed_out(deadline)))
}

/// The call did not finish within its deadline.
fn call_timed_out(deadline: std::time::Duration) -> DriverError {
    DriverError::Unavailable {
        class: tasklatch_core::task::ErrorClass::Timeout,
        message: format!(
            "the call did not finish within its deadline of {} ms (call_deadline_ms)",
            deadline.as_millis()
        ),
    }
}

/// A task born completed has nothing on the server to ask about (core never polls or cancels
/// a terminal task; this answers a caller that does).
fn inline_task() -> DriverError {
    DriverError::Malformed("the server answered this call inline; there is no remote task".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_must_be_a_bounded_json_object() {
        assert!(arguments(r#"{"a":1}"#).is_ok());
        for bad in ["[1]", "1", "nope", ""] {
            assert!(
                matches!(arguments(bad), Err(DriverError::Rejected(_))),
                "{bad}"
            );
        }
        let big = format!(r#"{{"a":"{}"}}"#, "x".repeat(MAX_ARGUMENTS_BYTES));
        assert!(matches!(arguments(&big), Err(DriverError::Rejected(_))));
    }
}
