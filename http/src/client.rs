//! The client every request of the drivers and the launcher goes through: HTTP/1.1 over a
//! pluggable [`Connector`], default headers, one deadline per request (head and body), every
//! request counted, redirects never followed (a 3xx is an answer like any other).

use crate::body::Body;
use crate::connector::{Connector, Dial};
use crate::error::{from_client, HttpError};
use crate::request::Request;
use crate::response::Response;
use bytes::Bytes;
use http::header::{HeaderMap, HeaderValue, ACCEPT};
use http_body_util::Full;
use hyper_util::client::legacy;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// How long an idle pooled connection is kept (reqwest's default).
const POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(90);

/// How a [`Client`] behaves.
#[derive(Clone)]
pub struct ClientConfig {
    /// The deadline of one request, from sending it to the last byte of its body.
    pub timeout: Duration,
    /// Headers every request carries unless it sets the same name itself. Mark secret
    /// values sensitive (`HeaderValue::set_sensitive`): nothing here prints headers.
    pub default_headers: HeaderMap,
    /// Whether a connection is kept for the next request (`false`: one connection per
    /// request).
    pub reuse_connections: bool,
    /// Incremented once per request sent (shareable among clients).
    pub sent: Arc<AtomicU64>,
}

impl ClientConfig {
    /// `timeout` per request, `Accept: */*` as the only default header (as reqwest),
    /// connections reused, a fresh counter.
    pub fn new(timeout: Duration) -> Self {
        let mut default_headers = HeaderMap::new();
        default_headers.insert(ACCEPT, HeaderValue::from_static("*/*"));
        ClientConfig {
            timeout,
            default_headers,
            reuse_connections: true,
            sent: Arc::new(AtomicU64::new(0)),
        }
    }
}

/// An HTTP client. Cheap to clone; clones share connections and the counter.
#[derive(Clone)]
pub struct Client {
    inner: legacy::Client<Dial, Full<Bytes>>,
    defaults: Arc<HeaderMap>,
    timeout: Duration,
    sent: Arc<AtomicU64>,
}

impl Client {
    /// A client over `connector`. Connection tasks are spawned on the current tokio runtime
    /// (the simulation's host runtime, in the simulation).
    pub fn new(config: ClientConfig, connector: Arc<dyn Connector>) -> Self {
        let idle = if config.reuse_connections {
            usize::MAX
        } else {
            0
        };
        let inner = legacy::Client::builder(TokioExecutor::new())
            .pool_timer(TokioTimer::new())
            .pool_idle_timeout(POOL_IDLE_TIMEOUT)
            .pool_max_idle_per_host(idle)
            .build(Dial(connector));
        Client {
            inner,
            defaults: Arc::new(config.default_headers),
            timeout: config.timeout,
            sent: config.sent,
        }
    }

    /// Requests sent so far through the counter this client was configured with.
    pub fn sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }

    /// The per-request deadline.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Sends `request` (counted, even if it then fails) and waits for the answer's head; the
    /// body is read from the [`Response`] within the same deadline, `timeout` from now.
    pub async fn send(&self, request: Request) -> Result<Response, HttpError> {
        self.sent.fetch_add(1, Ordering::Relaxed);
        let deadline = Instant::now() + self.timeout;
        let request = request.build(&self.defaults)?;
        let answer = match tokio::time::timeout_at(deadline, self.inner.request(request)).await {
            Err(_) => return Err(HttpError::Timeout),
            Ok(Err(e)) => return Err(from_client(&e)),
            Ok(Ok(answer)) => answer,
        };
        let (head, incoming) = answer.into_parts();
        Ok(Response::new(
            head.status,
            head.headers,
            Body::new(incoming, deadline),
        ))
    }
}
