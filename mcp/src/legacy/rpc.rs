//! One JSON-RPC request over streamable HTTP (protocol 2025-11-25): sent with the session
//! header, answered as JSON or as an SSE stream, read within the byte limit and the request
//! timeout, before anything is parsed.

use super::sse::SseReader;
use crate::errors::{http_body, http_client, http_status, timed_out, too_large};
use crate::server::Server;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicU64, Ordering};
use tasklatch_core::ports::DriverError;
use tasklatch_http::http::header::{ACCEPT, CONTENT_TYPE};
use tasklatch_http::{Request, Response};

/// The protocol version this client speaks.
pub(crate) const LEGACY_VERSION: &str = "2025-11-25";
/// Bytes of an HTTP error body read to classify it.
const ERROR_BODY_MAX: usize = 8 << 10;

/// How a request failed.
pub(crate) enum RpcError {
    /// The server no longer knows the session (it restarted): nothing in it can be reached.
    SessionLost,
    /// The server answered with a JSON-RPC error (untrusted message, unredacted).
    Rpc {
        /// The error code.
        code: i64,
        /// The server's message.
        message: String,
    },
    /// Anything else, already classified.
    Driver(DriverError),
}

impl From<DriverError> for RpcError {
    fn from(e: DriverError) -> Self {
        RpcError::Driver(e)
    }
}

/// A successful answer.
pub(crate) struct Reply {
    /// The JSON-RPC `result` (`null` for an accepted notification).
    pub result: Value,
    /// The `Mcp-Session-Id` header of the answer, if any.
    pub session: Option<String>,
}

/// Sends `method` with `params` (a request, or a notification when `notify`) in `session`.
pub(crate) async fn call(
    server: &Server,
    session: Option<&str>,
    method: &str,
    params: Value,
    notify: bool,
) -> Result<Reply, RpcError> {
    match tokio::time::timeout(
        server.timeout(),
        exchange(server, session, method, params, notify),
    )
    .await
    {
        Ok(result) => result,
        Err(_) => Err(timed_out(server.timeout()).into()),
    }
}

async fn exchange(
    server: &Server,
    session: Option<&str>,
    method: &str,
    params: Value,
    notify: bool,
) -> Result<Reply, RpcError> {
    static NEXT_ID: AtomicU64 = AtomicU64::new(1);
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    let message = if notify {
        json!({"jsonrpc": "2.0", "method": method, "params": params})
    } else {
        json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
    };
    let mut request = Request::post(server.config.url.as_str())
        .header(CONTENT_TYPE, "application/json")
        .header(ACCEPT, "application/json, text/event-stream")
        .body(message.to_string());
    if method != "initialize" {
        request = request.header("mcp-protocol-version", LEGACY_VERSION);
    }
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    for (name, value) in &server.headers {
        request = request.header(name.clone(), value.clone());
    }
    let response = server
        .http
        .send(request)
        .await
        .map_err(|e| http_client(&e, server.timeout()))?;
    let status = response.status().as_u16();
    let new_session = response.header_str("mcp-session-id").map(str::to_owned);
    if !(200..300).contains(&status) {
        return Err(refusal(session.is_some(), status, response).await);
    }
    if notify || status == 202 {
        return Ok(Reply {
            result: Value::Null,
            session: new_session,
        });
    }
    let message = read_answer(server, response, id).await?;
    let result = decode(message)?;
    Ok(Reply {
        result,
        session: new_session,
    })
}

/// A non-2xx answer: session lost, a JSON-RPC error, or the HTTP status.
async fn refusal(had_session: bool, status: u16, response: Response) -> RpcError {
    if status == 404 && had_session {
        return RpcError::SessionLost;
    }
    let body = response
        .bytes_limited(ERROR_BODY_MAX)
        .await
        .unwrap_or_default();
    let text = String::from_utf8_lossy(&body);
    if status == 400 && had_session && text.to_ascii_lowercase().contains("session") {
        return RpcError::SessionLost;
    }
    match serde_json::from_slice::<Value>(&body).ok().map(decode) {
        Some(Err(rpc @ RpcError::Rpc { .. })) => rpc,
        _ => RpcError::Driver(http_status(status)),
    }
}

/// The JSON-RPC message answering request `id`: the JSON body (at most the byte limit), or
/// the first event of the SSE stream that answers it (other events — notifications, server
/// requests — are skipped; the stream as a whole is bounded by the limit).
async fn read_answer(server: &Server, mut response: Response, id: u64) -> Result<Value, RpcError> {
    let is_sse = response
        .header_str(CONTENT_TYPE.as_str())
        .is_some_and(|ct| ct.starts_with("text/event-stream"));
    if !is_sse {
        let body = response
            .bytes_limited(server.limit())
            .await
            .map_err(|e| http_body(&e, server.timeout()))?;
        return serde_json::from_slice(&body)
            .map_err(|_| DriverError::Malformed("the answer is not JSON".into()).into());
    }
    let mut reader = SseReader::new(server.limit());
    while let Some(chunk) = response
        .body_mut()
        .chunk()
        .await
        .map_err(|e| http_body(&e, server.timeout()))?
    {
        let events = reader.push(&chunk).map_err(|_| too_large(server.limit()))?;
        for data in events {
            let message: Value = serde_json::from_str(&data).map_err(|_| {
                DriverError::Malformed("an event of the answer stream is not JSON".into())
            })?;
            if message.get("id").and_then(Value::as_u64) == Some(id) {
                return Ok(message);
            }
        }
    }
    Err(DriverError::Malformed("the answer stream ended without the answer".into()).into())
}

/// The `result` of a JSON-RPC answer, or its error.
fn decode(message: Value) -> Result<Value, RpcError> {
    if let Some(error) = message.get("error") {
        let code = error.get("code").and_then(Value::as_i64).unwrap_or(0);
        let text = error.get("message").and_then(Value::as_str).unwrap_or("");
        return Err(RpcError::Rpc {
            code,
            message: text.to_owned(),
        });
    }
    match message.get("result") {
        Some(result) => Ok(result.clone()),
        None => {
            Err(DriverError::Malformed("the answer has neither result nor error".into()).into())
        }
    }
}
