//! rmcp's errors, classified by the crate's one policy ([`crate::errors`]).

use super::ConnectError;
use crate::errors::{
    http_body, http_client, http_status, json_rpc, timed_out, too_large, unavailable,
};
use crate::redact::Redactor;
use crate::server::Server;
use rmcp::model::ErrorCode;
use rmcp::service::{ClientInitializeError, ServiceError};
use rmcp::transport::streamable_http_client::{SseError, StreamableHttpError};
use std::error::Error;
use tasklatch_core::ports::DriverError;
use tasklatch_core::task::ErrorClass;
use tasklatch_http::HttpError;

/// A failed `server/discover` (`NotExtension` when the server answered as a legacy one). A
/// JSON-RPC internal error (-32603: rmcp's reading of a 5xx with a JSON-RPC body) is a failure,
/// never a verdict on the protocol. A server error (-32000, as the TypeScript SDK's servers
/// answer "Bad Request: Server not initialized" to a request outside a session) is the legacy
/// answer it looks like: `auto` then tries the legacy protocol, and keeps that verdict only if
/// a legacy submit works; an extension task's calls never take it as a verdict.
pub(super) fn connect_error(e: ClientInitializeError, server: &Server) -> ConnectError {
    let not_a_verdict = |code: ErrorCode| {
        code == ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY
            || code == ErrorCode::HEADER_MISMATCH
            || code.0 == -32603
    };
    match e {
        ClientInitializeError::JsonRpcError(data) if !not_a_verdict(data.code) => {
            ConnectError::NotExtension
        }
        ClientInitializeError::NoCompatibleProtocolVersion { .. } => ConnectError::NotExtension,
        ClientInitializeError::JsonRpcError(data) => ConnectError::Failed(json_rpc(
            "server/discover",
            i64::from(data.code.0),
            &data.message,
            &server.redactor,
        )),
        ClientInitializeError::TransportError { error, .. } => {
            ConnectError::Failed(transport(error.error.as_ref(), server))
        }
        ClientInitializeError::ConnectionClosed(_) => ConnectError::Failed(unavailable(
            ErrorClass::Connection,
            "the connection closed during server/discover",
        )),
        _ => ConnectError::Failed(unavailable(
            ErrorClass::Server,
            "server/discover got an answer the protocol does not define",
        )),
    }
}

/// A failed request `method`. `TransportClosed` means the client must be opened again.
pub(super) fn service_error(
    method: &str,
    e: ServiceError,
    server: &Server,
    redactor: &Redactor,
) -> DriverError {
    match e {
        ServiceError::McpError(data) => {
            json_rpc(method, i64::from(data.code.0), &data.message, redactor)
        }
        ServiceError::TransportSend(error) => transport(error.error.as_ref(), server),
        ServiceError::TransportClosed => unavailable(
            ErrorClass::Connection,
            "the connection to the server closed",
        ),
        ServiceError::UnexpectedResponse => DriverError::Malformed(format!(
            "{method}: the answer is not what the protocol defines for it"
        )),
        ServiceError::Timeout { .. } => timed_out(server.timeout()),
        _ => unavailable(
            ErrorClass::Connection,
            format!("{method}: the request failed"),
        ),
    }
}

/// A transport failure: the rmcp HTTP error somewhere in the chain, classified.
fn transport(error: &(dyn Error + Send + Sync + 'static), server: &Server) -> DriverError {
    let mut current: Option<&(dyn Error + 'static)> = Some(error);
    while let Some(e) = current {
        if let Some(http) = e.downcast_ref::<StreamableHttpError<HttpError>>() {
            return http_error(http, server);
        }
        current = e.source();
    }
    unavailable(ErrorClass::Connection, "the transport failed")
}

fn http_error(e: &StreamableHttpError<HttpError>, server: &Server) -> DriverError {
    match e {
        StreamableHttpError::HttpStatus(s) => http_status(s.status),
        StreamableHttpError::ResponseBodyTooLarge { .. } => too_large(server.limit()),
        StreamableHttpError::Client(e) => http_client(e, server.timeout()),
        StreamableHttpError::AuthRequired(_) => http_status(401),
        StreamableHttpError::InsufficientScope(_) => http_status(403),
        StreamableHttpError::SessionExpired => http_status(404),
        StreamableHttpError::UnexpectedServerResponse(text) => match status_prefix(text) {
            Some(status) => http_status(status),
            None => DriverError::Malformed("the answer is not valid JSON-RPC".into()),
        },
        StreamableHttpError::Sse(SseError::Body(e)) => match e.downcast_ref::<HttpError>() {
            Some(HttpError::TooLarge(_)) => too_large(server.limit()),
            Some(e @ (HttpError::Timeout | HttpError::Connect(_) | HttpError::Transport(_))) => {
                http_body(e, server.timeout())
            }
            None => DriverError::Malformed("the answer is not valid JSON-RPC".into()),
        },
        StreamableHttpError::Sse(_)
        | StreamableHttpError::Deserialize(_)
        | StreamableHttpError::UnexpectedContentType(_)
        | StreamableHttpError::UnexpectedEndOfStream => {
            DriverError::Malformed("the answer is not valid JSON-RPC".into())
        }
        _ => unavailable(ErrorClass::Connection, "the transport failed"),
    }
}

/// The status of rmcp's "HTTP 404 Not Found: …" texts.
fn status_prefix(text: &str) -> Option<u16> {
    let rest = text.strip_prefix("HTTP ")?;
    rest.get(..3)?.parse().ok()
}
