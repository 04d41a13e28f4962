//! One configured server, ready to be called: its HTTP client (shared by both protocols), its
//! headers, the secrets its errors must never echo, and — for `protocol = "auto"` — the
//! protocol it turned out to speak.

use crate::config::{Protocol, ServerConfig};
use crate::redact::Redactor;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;
use tasklatch_core::ids::ServerId;
use tasklatch_http::http::header::{HeaderName, HeaderValue};
use tasklatch_http::{Client, ClientConfig, Connector, TcpTls};

/// The protocol a server was found (or configured) to speak.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) enum Speaks {
    /// The tasks extension.
    Extension,
    /// Legacy tasks.
    Legacy,
}

/// How long `auto`'s verdict "legacy" holds before the server is probed for the extension
/// again: a server upgraded (or one misjudged during a deploy) is found within this.
pub(crate) const LEGACY_VERDICT_TTL: Duration = Duration::from_secs(600);

/// What a server speaks, and until when that holds (`None`: for the process's life — a
/// configured protocol, or the extension once it answered a call).
#[derive(Copy, Clone, Debug)]
pub(crate) struct Verdict {
    /// The protocol.
    pub speaks: Speaks,
    /// When the verdict expires and `auto` probes again.
    pub until: Option<tokio::time::Instant>,
}

/// A server with everything needed to call it.
pub(crate) struct Server {
    /// The id tasks name it by.
    pub id: ServerId,
    /// Its configuration (validated).
    pub config: ServerConfig,
    /// The HTTP client: no redirects, the request timeout, requests counted, one connection
    /// per request.
    pub http: Client,
    /// The configured extra headers, marked sensitive.
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// Cuts the header values out of any text.
    pub redactor: Redactor,
    /// What `auto` found; fixed protocols are set from the start.
    speaks: tokio::sync::Mutex<Option<Verdict>>,
}

impl Server {
    /// Builds the server's client over `connector` (`None`: TCP + rustls, connects bounded by
    /// the request timeout and at most 5 s). `config` must have passed validation; a header
    /// that still fails to convert is an `Err` (naming the header, never its value).
    pub(crate) fn new(
        id: ServerId,
        config: ServerConfig,
        counter: Arc<AtomicU64>,
        connector: Option<Arc<dyn Connector>>,
    ) -> Result<Self, String> {
        let timeout = config.request_timeout();
        let connector = match connector {
            Some(connector) => connector,
            None => Arc::new(
                TcpTls::new(Some(timeout.min(Duration::from_secs(5))))
                    .map_err(|_| "cannot build the HTTP client".to_owned())?,
            ),
        };
        let mut client = ClientConfig::new(timeout);
        client.reuse_connections = false;
        client.sent = counter;
        let http = Client::new(client, connector);
        let mut headers = Vec::new();
        for (name, value) in &config.headers {
            let name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| format!("header {name}: invalid name"))?;
            let mut value = HeaderValue::from_str(value.expose())
                .map_err(|_| format!("header {name}: invalid value"))?;
            value.set_sensitive(true);
            headers.push((name, value));
        }
        let redactor = Redactor::default().with_all(config.headers.values().map(|v| v.expose()));
        let speaks = match config.protocol {
            Protocol::Auto => None,
            Protocol::Extension => Some(Speaks::Extension),
            Protocol::Legacy => Some(Speaks::Legacy),
        }
        .map(|speaks| Verdict {
            speaks,
            until: None,
        });
        Ok(Server {
            id,
            config,
            http,
            headers,
            redactor,
            speaks: tokio::sync::Mutex::new(speaks),
        })
    }

    /// The protocol the server speaks now; `None` for an `auto` server not yet judged or whose
    /// verdict expired.
    pub(crate) async fn speaks(&self) -> Option<Speaks> {
        let verdict = (*self.speaks.lock().await)?;
        match verdict.until {
            Some(until) if tokio::time::Instant::now() >= until => None,
            _ => Some(verdict.speaks),
        }
    }

    /// Records what an `auto` server was found to speak: the extension for good (it answered
    /// a call), legacy for [`LEGACY_VERDICT_TTL`] (only after a legacy call succeeded).
    pub(crate) async fn found(&self, speaks: Speaks) {
        let until = match speaks {
            Speaks::Extension => None,
            Speaks::Legacy => Some(tokio::time::Instant::now() + LEGACY_VERDICT_TTL),
        };
        *self.speaks.lock().await = Some(Verdict { speaks, until });
    }

    /// The request timeout.
    pub(crate) fn timeout(&self) -> Duration {
        self.config.request_timeout()
    }

    /// The answer size limit in bytes.
    pub(crate) fn limit(&self) -> usize {
        self.config.max_response_bytes
    }
}
