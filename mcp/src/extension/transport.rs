//! rmcp's HTTP client trait, implemented over the crate's one HTTP client
//! ([`tasklatch_http::Client`]): every request counted, bounded by the request timeout (head and
//! body), JSON answers refused past `max_json_response_size` while they are read, SSE events
//! bounded by `max_sse_event_size` ([`super::events`]), redirects never followed. The answers
//! are classified as rmcp's own clients classify them (what its lifecycle relies on: a
//! `server/discover` refused with a 4xx becomes a JSON-RPC error the lifecycle can read).

use super::events::{bounded_events, media_type_is};
use futures::stream::BoxStream;
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, ErrorData, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_client::{
    AuthRequiredError, HttpStatusError, InsufficientScopeError, SseError, StreamableHttpClient,
    StreamableHttpError, StreamableHttpPostResponse, StreamableHttpResponseLimits,
};
use sse_stream::Sse;
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;
use tasklatch_http::http::header::{
    HeaderName, HeaderValue, ACCEPT, AUTHORIZATION, CONTENT_TYPE, RETRY_AFTER, WWW_AUTHENTICATE,
};
use tasklatch_http::http::StatusCode;
use tasklatch_http::{Client, HttpError, Request, Response};

const SESSION_ID: &str = "mcp-session-id";
const LAST_EVENT_ID: &str = "last-event-id";
const JSON: &str = "application/json";
const EVENT_STREAM: &str = "text/event-stream";
/// Names rmcp's custom headers may not use (the protocol version header rmcp adds itself).
const RESERVED: [&str; 3] = ["accept", SESSION_ID, LAST_EVENT_ID];

type Headers = HashMap<HeaderName, HeaderValue>;
type HttpResult<T> = Result<T, StreamableHttpError<HttpError>>;
type Events = BoxStream<'static, Result<Sse, SseError>>;

/// The extension's transport client: the server's [`Client`] in rmcp's trait.
#[derive(Clone)]
pub(crate) struct Transport(pub(crate) Client);

impl Transport {
    /// Sends `request` with the bearer token and rmcp's custom headers.
    async fn send(
        &self,
        mut request: Request,
        auth: Option<String>,
        custom: Headers,
    ) -> HttpResult<Response> {
        if let Some(token) = auth {
            request = request.header(AUTHORIZATION, format!("Bearer {token}"));
        }
        for (name, value) in custom {
            if RESERVED.contains(&name.as_str()) {
                return Err(StreamableHttpError::ReservedHeaderConflict(
                    name.to_string(),
                ));
            }
            request = request.header(name, value);
        }
        self.0
            .send(request)
            .await
            .map_err(StreamableHttpError::Client)
    }
}

/// A 401 or 403 carrying a challenge, as rmcp's errors for them.
fn challenge(response: &Response) -> HttpResult<()> {
    let status = response.status();
    if !matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN) {
        return Ok(());
    }
    let Some(header) = response.headers().get(WWW_AUTHENTICATE) else {
        return Ok(());
    };
    let text = header.to_str().map_err(|_| {
        StreamableHttpError::UnexpectedServerResponse(Cow::from(
            "invalid www-authenticate header value",
        ))
    })?;
    Err(if status == StatusCode::UNAUTHORIZED {
        StreamableHttpError::AuthRequired(AuthRequiredError::new(text.to_owned()))
    } else {
        StreamableHttpError::InsufficientScope(InsufficientScopeError::new(text.to_owned(), None))
    })
}

/// 429 and 5xx as status metadata (with a short `Retry-After`), never their body.
fn status_error(response: &Response) -> Option<HttpStatusError> {
    let status = response.status();
    if status != StatusCode::TOO_MANY_REQUESTS && !status.is_server_error() {
        return None;
    }
    let retry_after = response.header_str(RETRY_AFTER.as_str()).map(str::to_owned);
    Some(HttpStatusError::new(status.as_u16(), retry_after))
}

/// A JSON body read up to `limit` bytes (rmcp's "too large" error past it).
async fn json_body(response: Response, limit: usize) -> HttpResult<Vec<u8>> {
    response.bytes_limited(limit).await.map_err(|e| match e {
        HttpError::TooLarge(max_size) => StreamableHttpError::ResponseBodyTooLarge { max_size },
        other => StreamableHttpError::Client(other),
    })
}

/// Whether the answer's `Content-Type` is `expected`.
fn content_is(response: &Response, expected: &str) -> bool {
    response
        .headers()
        .get(CONTENT_TYPE)
        .is_some_and(|ct| media_type_is(ct, expected))
}

/// What one POST is: the message and whether a session was attached.
struct Post<'a> {
    message: &'a ClientJsonRpcMessage,
    session_attached: bool,
    limits: StreamableHttpResponseLimits,
}

impl Post<'_> {
    /// A message that leaves no request outstanding (its answer carries nothing needed).
    fn awaits_no_response(&self) -> bool {
        !matches!(self.message, ClientJsonRpcMessage::Request(_))
    }

    /// A successful answer: accepted, a JSON message, or an event stream.
    async fn success(
        &self,
        response: Response,
        session: Option<String>,
    ) -> HttpResult<StreamableHttpPostResponse> {
        if response.content_length() == Some(0) && self.awaits_no_response() {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if content_is(&response, EVENT_STREAM) {
            let events = bounded_events(
                response.into_body().into_stream(),
                self.limits.max_sse_event_size,
            );
            return Ok(StreamableHttpPostResponse::Sse(events, session));
        }
        if !content_is(&response, JSON) {
            if self.awaits_no_response() {
                return Ok(StreamableHttpPostResponse::Accepted);
            }
            let ct = response.headers().get(CONTENT_TYPE);
            let ct = ct.map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
            return Err(StreamableHttpError::UnexpectedContentType(ct));
        }
        let body = json_body(response, self.limits.max_json_response_size).await?;
        match serde_json::from_slice::<ServerJsonRpcMessage>(&body) {
            Ok(parsed) => Ok(StreamableHttpPostResponse::Json(parsed, session)),
            Err(_) if self.awaits_no_response() => Ok(StreamableHttpPostResponse::Accepted),
            Err(e) => Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
                format!("could not parse JSON response as ServerJsonRpcMessage: {e}"),
            ))),
        }
    }

    /// A refusal (not 2xx): the JSON-RPC error it carries, the discover rejection the
    /// lifecycle reads as "not an extension server", or the status.
    async fn refusal(
        &self,
        response: Response,
        session: Option<String>,
    ) -> HttpResult<StreamableHttpPostResponse> {
        let status = response.status();
        let status_error = status_error(&response);
        let json = content_is(&response, JSON);
        if !json || status == StatusCode::TOO_MANY_REQUESTS {
            if let Some(error) = status_error {
                return Err(error.into());
            }
        }
        let auth = matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN);
        let max_error = self.limits.max_error_response_size;
        let body = if json && !auth {
            match json_body(response, self.limits.max_json_response_size).await {
                Ok(body) => body,
                Err(e @ StreamableHttpError::ResponseBodyTooLarge { .. }) => {
                    return Err(status_error.map(Into::into).unwrap_or(e))
                }
                Err(_) => Vec::new(),
            }
        } else {
            let body = response.into_body().read_prefix(max_error).await;
            body.unwrap_or_default()
        };
        let rpc_error = (json && !auth)
            .then(|| serde_json::from_slice::<ServerJsonRpcMessage>(&body).ok())
            .flatten()
            .filter(|m| matches!(m, ServerJsonRpcMessage::Error(_)));
        if let Some(error) = rpc_error {
            return Ok(self
                .discover_rejected(status, &body)
                .unwrap_or(StreamableHttpPostResponse::Json(error, session)));
        }
        let text = String::from_utf8_lossy(&body[..body.len().min(max_error)]).into_owned();
        if let Some(answer) = self.discover_rejected(status, text.as_bytes()) {
            return Ok(answer);
        }
        match status_error {
            Some(error) => Err(error.into()),
            None => Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
                format!("HTTP {status}"),
            ))),
        }
    }

    /// A sessionless `server/discover` refused with a 4xx (not 401/403), as the JSON-RPC
    /// error answering it (the server's own error if it sent one, else "invalid request"),
    /// under the request's id — what a legacy server answers, which the lifecycle classifies.
    fn discover_rejected(
        &self,
        status: StatusCode,
        body: &[u8],
    ) -> Option<StreamableHttpPostResponse> {
        let auth = matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN);
        if self.session_attached || !status.is_client_error() || auth {
            return None;
        }
        let ClientJsonRpcMessage::Request(request) = self.message else {
            return None;
        };
        if !matches!(request.request, ClientRequest::DiscoverRequest(_)) {
            return None;
        }
        let error = match serde_json::from_slice::<ServerJsonRpcMessage>(body) {
            Ok(ServerJsonRpcMessage::Error(error)) => error.error,
            _ => ErrorData::invalid_request(
                format!(
                    "server/discover rejected with HTTP {status}: {}",
                    String::from_utf8_lossy(body)
                ),
                None,
            ),
        };
        Some(StreamableHttpPostResponse::Json(
            ServerJsonRpcMessage::error(error, Some(request.id.clone())),
            None,
        ))
    }
}

impl Transport {
    /// One POST of `message`, classified.
    async fn post(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth: Option<String>,
        custom: Headers,
        limits: StreamableHttpResponseLimits,
    ) -> HttpResult<StreamableHttpPostResponse> {
        let body = serde_json::to_vec(&message)?;
        let mut request = Request::post(uri.as_ref())
            .header(ACCEPT, format!("{EVENT_STREAM}, {JSON}"))
            .header(CONTENT_TYPE, JSON)
            .body(body);
        if let Some(session) = &session_id {
            request = request.header(SESSION_ID, session.as_ref());
        }
        let response = self.send(request, auth, custom).await?;
        challenge(&response)?;
        let status = response.status();
        if matches!(status, StatusCode::ACCEPTED | StatusCode::NO_CONTENT) {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if status == StatusCode::NOT_FOUND && session_id.is_some() {
            return Err(StreamableHttpError::SessionExpired);
        }
        let session = response.header_str(SESSION_ID).map(str::to_owned);
        let post = Post {
            message: &message,
            session_attached: session_id.is_some(),
            limits,
        };
        if status.is_success() {
            post.success(response, session).await
        } else {
            post.refusal(response, session).await
        }
    }

    /// A GET opening an event stream.
    async fn stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth: Option<String>,
        custom: Headers,
        max_event: usize,
    ) -> HttpResult<Events> {
        let mut request =
            Request::get(uri.as_ref()).header(ACCEPT, format!("{EVENT_STREAM}, {JSON}"));
        if let Some(session) = session_id {
            request = request.header(SESSION_ID, session.as_ref());
        }
        if let Some(last) = last_event_id {
            request = request.header(LAST_EVENT_ID, last);
        }
        let response = self.send(request, auth, custom).await?;
        if response.status() == StatusCode::METHOD_NOT_ALLOWED {
            return Err(StreamableHttpError::ServerDoesNotSupportSse);
        }
        challenge(&response)?;
        if !response.status().is_success() {
            let error = status_error(&response)
                .unwrap_or_else(|| HttpStatusError::new(response.status().as_u16(), None));
            return Err(error.into());
        }
        if !content_is(&response, EVENT_STREAM) && !content_is(&response, JSON) {
            let ct = response.headers().get(CONTENT_TYPE);
            let ct = ct.map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
            return Err(StreamableHttpError::UnexpectedContentType(ct));
        }
        Ok(bounded_events(
            response.into_body().into_stream(),
            max_event,
        ))
    }
}

/// rmcp's default limits with another SSE event limit.
fn with_event_limit(max_sse_event_size: usize) -> StreamableHttpResponseLimits {
    let mut limits = StreamableHttpResponseLimits::default();
    limits.max_sse_event_size = max_sse_event_size;
    limits
}

impl StreamableHttpClient for Transport {
    type Error = HttpError;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth: Option<String>,
        custom: Headers,
    ) -> HttpResult<StreamableHttpPostResponse> {
        let limits = StreamableHttpResponseLimits::default();
        self.post(uri, message, session_id, auth, custom, limits)
            .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth: Option<String>,
        custom: Headers,
        max_sse_event_size: usize,
    ) -> HttpResult<StreamableHttpPostResponse> {
        let limits = with_event_limit(max_sse_event_size);
        self.post(uri, message, session_id, auth, custom, limits)
            .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth: Option<String>,
        custom: Headers,
        limits: StreamableHttpResponseLimits,
    ) -> HttpResult<StreamableHttpPostResponse> {
        self.post(uri, message, session_id, auth, custom, limits)
            .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth: Option<String>,
        custom: Headers,
    ) -> HttpResult<()> {
        let request = Request::delete(uri.as_ref()).header(SESSION_ID, session_id.as_ref());
        let response = self.send(request, auth, custom).await?;
        let status = response.status();
        if status.is_success() || status == StatusCode::METHOD_NOT_ALLOWED {
            return Ok(());
        }
        Err(HttpStatusError::new(status.as_u16(), None).into())
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth: Option<String>,
        custom: Headers,
    ) -> HttpResult<Events> {
        let max = StreamableHttpResponseLimits::default().max_sse_event_size;
        self.stream(uri, session_id, last_event_id, auth, custom, max)
            .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth: Option<String>,
        custom: Headers,
        max_sse_event_size: usize,
    ) -> HttpResult<Events> {
        let max = max_sse_event_size;
        self.stream(uri, session_id, last_event_id, auth, custom, max)
            .await
    }
}
