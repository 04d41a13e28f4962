//! One bounded HTTP exchange with the Agent Server: the configured headers (marked sensitive),
//! a timeout on the whole request, no redirects, and an answer read up to a byte limit —
//! checked while reading, before anything is parsed.

use crate::config::{ConfigError, ValidConfig};
use crate::text::Redactor;
use std::sync::Arc;
use tasklatch_http::http::header::{HeaderName, HeaderValue, ACCEPT, CONTENT_TYPE};
use tasklatch_http::{Client, ClientConfig, Connector, Request, TcpTls};

/// An answer: its status and at most the configured number of body bytes.
pub struct Answer {
    /// The HTTP status code.
    pub status: u16,
    /// The whole body (never longer than the limit).
    pub body: Vec<u8>,
}

/// Why an exchange produced no answer (the one HTTP client's classification; the messages hold
/// no URL and no header value, and their causes are redacted again with this server's secrets).
pub use tasklatch_http::HttpError as CallError;

/// The HTTP side of the launcher. Cheap to share (the client is a handle).
pub struct Http {
    client: Client,
    base_url: String,
    max_bytes: usize,
    redactor: Redactor,
}

impl Http {
    /// A client for `cfg` over TCP + rustls (see [`Http::with_connector`]).
    pub fn new(cfg: &ValidConfig) -> Result<Self, ConfigError> {
        let connector = TcpTls::new(None).map_err(|_| ConfigError::Invalid {
            field: "base_url",
            reason: "no HTTP client can be built for it (TLS setup failed)".into(),
        })?;
        Self::with_connector(cfg, Arc::new(connector))
    }

    /// A client for `cfg` over `connector`: its headers on every request (sensitive, so they
    /// are never printed), `cfg.request_timeout` per request (head and body), redirects never
    /// followed (an answer is taken as is).
    pub fn with_connector(
        cfg: &ValidConfig,
        connector: Arc<dyn Connector>,
    ) -> Result<Self, ConfigError> {
        let mut config = ClientConfig::new(cfg.request_timeout);
        for (name, value) in &cfg.headers {
            let bad = || ConfigError::Invalid {
                field: "headers",
                reason: format!("has an invalid entry {name:?}"),
            };
            let name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| bad())?;
            let mut value = HeaderValue::from_str(value).map_err(|_| bad())?;
            value.set_sensitive(true);
            config.default_headers.insert(name, value);
        }
        Ok(Http {
            client: Client::new(config, connector),
            base_url: cfg.base_url.clone(),
            max_bytes: cfg.max_answer_bytes,
            redactor: Redactor::new(cfg.headers.iter().map(|(_, v)| v.clone())),
        })
    }

    /// The redactor for this server's answers (it knows our header values).
    pub fn redactor(&self) -> &Redactor {
        &self.redactor
    }

    /// `GET {base}{path}`; `path` starts with `/` and holds only validated ids.
    pub async fn get(&self, path: &str) -> Result<Answer, CallError> {
        let url = format!("{}{path}", self.base_url);
        self.exchange(Request::get(url)).await
    }

    /// `POST {base}{path}` with a JSON body.
    pub async fn post(&self, path: &str, body: &serde_json::Value) -> Result<Answer, CallError> {
        let url = format!("{}{path}", self.base_url);
        let bytes = serde_json::to_vec(body).map_err(|e| CallError::Transport(e.to_string()))?;
        let request = Request::post(url)
            .header(CONTENT_TYPE, "application/json")
            .body(bytes);
        self.exchange(request).await
    }

    async fn exchange(&self, request: Request) -> Result<Answer, CallError> {
        let response = self
            .client
            .send(request.header(ACCEPT, "application/json"))
            .await
            .map_err(|e| self.redacted(e))?;
        let status = response.status().as_u16();
        let body = response
            .bytes_limited(self.max_bytes)
            .await
            .map_err(|e| self.redacted(e))?;
        debug_assert!(body.len() <= self.max_bytes);
        Ok(Answer { status, body })
    }

    /// The error with its cause cleaned of this server's secrets (and bounded).
    fn redacted(&self, e: CallError) -> CallError {
        match e {
            CallError::Connect(why) => CallError::Connect(self.redactor.detail(&why)),
            CallError::Transport(why) => CallError::Transport(self.redactor.detail(&why)),
            other => other,
        }
    }
}
