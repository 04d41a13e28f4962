//! The HTTP client both protocols use, counting every request it sends (a metric, and how the
//! tests prove there is no retry storm). For the extension it stands in rmcp's transport as
//! its `StreamableHttpClient`, delegating every call to reqwest's own implementation — which
//! enforces the byte limits while reading, before parsing.

use futures::stream::BoxStream;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use sse_stream::Sse;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A reqwest client that counts the requests sent through it.
#[derive(Clone)]
pub(crate) struct CountingClient {
    inner: reqwest::Client,
    sent: Arc<AtomicU64>,
}

type Headers = HashMap<HeaderName, HeaderValue>;
type HttpResult<T> = Result<T, StreamableHttpError<reqwest::Error>>;

impl CountingClient {
    pub(crate) fn new(inner: reqwest::Client, sent: Arc<AtomicU64>) -> Self {
        CountingClient { inner, sent }
    }

    fn count(&self) {
        self.sent.fetch_add(1, Ordering::Relaxed);
    }

    /// A POST to `url` (counted when sent with [`Self::send`]).
    pub(crate) fn post(&self, url: &str) -> reqwest::RequestBuilder {
        self.inner.post(url)
    }

    /// Sends a request built with [`Self::post`], counting it.
    pub(crate) async fn send(
        &self,
        request: reqwest::RequestBuilder,
    ) -> Result<reqwest::Response, reqwest::Error> {
        self.count();
        request.send().await
    }
}

impl StreamableHttpClient for CountingClient {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: Headers,
    ) -> HttpResult<StreamableHttpPostResponse> {
        self.count();
        self.inner
            .post_message(uri, message, session_id, auth_header, custom_headers)
            .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: Headers,
        max_sse_event_size: usize,
    ) -> HttpResult<StreamableHttpPostResponse> {
        self.count();
        self.inner
            .post_message_with_max_sse_event_size(
                uri,
                message,
                session_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: Headers,
        limits: StreamableHttpResponseLimits,
    ) -> HttpResult<StreamableHttpPostResponse> {
        self.count();
        self.inner
            .post_message_with_response_limits(
                uri,
                message,
                session_id,
                auth_header,
                custom_headers,
                limits,
            )
            .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: Headers,
    ) -> HttpResult<()> {
        self.count();
        self.inner
            .delete_session(uri, session_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: Headers,
    ) -> HttpResult<BoxStream<'static, Result<Sse, SseError>>> {
        self.count();
        self.inner
            .get_stream(uri, session_id, last_event_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: Headers,
        max_sse_event_size: usize,
    ) -> HttpResult<BoxStream<'static, Result<Sse, SseError>>> {
        self.count();
        self.inner
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await
    }
}
