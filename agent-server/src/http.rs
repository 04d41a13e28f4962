//! One bounded HTTP exchange with the Agent Server: the configured headers (marked sensitive),
//! a timeout on the whole request, no redirects, and an answer read up to a byte limit —
//! checked while reading, before anything is parsed.

use crate::config::{ConfigError, ValidConfig};
use crate::text::Redactor;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use std::fmt;

/// An answer: its status and at most the configured number of body bytes.
pub struct Answer {
    /// The HTTP status code.
    pub status: u16,
    /// The whole body (never longer than the limit).
    pub body: Vec<u8>,
}

/// Why an exchange produced no answer. The messages hold no URL and no header value.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum CallError {
    /// No complete answer within the request timeout.
    Timeout,
    /// The server could not be reached.
    Connect(String),
    /// The answer is longer than the byte limit.
    TooLarge(usize),
    /// The exchange broke off (reset, bad framing, …).
    Transport(String),
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallError::Timeout => f.write_str("no answer within the request timeout"),
            CallError::Connect(why) => write!(f, "cannot connect: {why}"),
            CallError::TooLarge(limit) => write!(f, "answer larger than {limit} bytes, refused"),
            CallError::Transport(why) => write!(f, "exchange failed: {why}"),
        }
    }
}

/// The HTTP side of the launcher. Cheap to share (`reqwest::Client` is a handle).
pub struct Http {
    client: reqwest::Client,
    base_url: String,
    max_bytes: usize,
    redactor: Redactor,
}

impl Http {
    /// A client for `cfg`: its headers on every request (sensitive, so reqwest never prints
    /// them), `cfg.request_timeout` per request, redirects refused (an answer is taken as is).
    pub fn new(cfg: &ValidConfig) -> Result<Self, ConfigError> {
        let mut headers = HeaderMap::new();
        for (name, value) in &cfg.headers {
            let bad = || ConfigError::Invalid {
                field: "headers",
                reason: format!("has an invalid entry {name:?}"),
            };
            let name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| bad())?;
            let mut value = HeaderValue::from_str(value).map_err(|_| bad())?;
            value.set_sensitive(true);
            headers.insert(name, value);
        }
        let client = reqwest::Client::builder()
            .default_headers(headers)
            .timeout(cfg.request_timeout)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|_| ConfigError::Invalid {
                field: "base_url",
                reason: "no HTTP client can be built for it (TLS setup failed)".into(),
            })?;
        Ok(Http {
            client,
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
        self.exchange(self.client.get(url)).await
    }

    /// `POST {base}{path}` with a JSON body.
    pub async fn post(&self, path: &str, body: &serde_json::Value) -> Result<Answer, CallError> {
        let url = format!("{}{path}", self.base_url);
        let bytes = serde_json::to_vec(body).map_err(|e| CallError::Transport(e.to_string()))?;
        let request = self
            .client
            .post(url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(bytes);
        self.exchange(request).await
    }

    async fn exchange(&self, request: reqwest::RequestBuilder) -> Result<Answer, CallError> {
        let mut response = request
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|e| self.classify(&e))?;
        let status = response.status().as_u16();
        if response
            .content_length()
            .is_some_and(|n| n > self.max_bytes as u64)
        {
            return Err(CallError::TooLarge(self.max_bytes));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| self.classify(&e))? {
            if body.len() + chunk.len() > self.max_bytes {
                return Err(CallError::TooLarge(self.max_bytes));
            }
            body.extend_from_slice(&chunk);
        }
        debug_assert!(body.len() <= self.max_bytes);
        Ok(Answer { status, body })
    }

    /// What went wrong, from the error's causes only: reqwest's own message names the URL.
    fn classify(&self, e: &reqwest::Error) -> CallError {
        if e.is_timeout() {
            return CallError::Timeout;
        }
        let mut causes = Vec::new();
        let mut source = std::error::Error::source(e);
        while let Some(cause) = source {
            causes.push(cause.to_string());
            source = cause.source();
        }
        let why = match causes.last() {
            Some(innermost) => self.redactor.detail(innermost),
            None => "unknown cause".to_owned(),
        };
        if e.is_connect() {
            CallError::Connect(why)
        } else {
            CallError::Transport(why)
        }
    }
}
