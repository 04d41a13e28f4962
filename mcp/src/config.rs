//! Per-server configuration: where each MCP server is, which tasks protocol it speaks, and the
//! bounds every call to it respects.
//!
//! The types derive `Deserialize` (the worker reads them from TOML). Every field but `url` has
//! a safe default; [`McpConfig::validate`] refuses anything unusable with an error that names
//! the server and the field. Header values are secrets (tokens): they are wrapped in
//! [`Secret`], so no `Debug`, log line or error shows them.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::time::Duration;
use tasklatch_core::policy::MAX_ID;
use tasklatch_core::secret::Secret;

/// The default time one request may take, sending to the last byte of its answer. Core starts
/// a remote call only while 30 s of its lease are left (`Policy::min_lease_left`): well inside.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest request timeout accepted (must stay inside core's `min_lease_left` of 30 s).
pub const MAX_REQUEST_TIMEOUT: Duration = Duration::from_secs(25);
/// The longest call deadline accepted: one driver method (a legacy `get_status` is 2 requests,
/// a cancel or answer up to 4) ends within this, whatever its requests' timeouts.
pub const MAX_CALL_DEADLINE: Duration = Duration::from_secs(25);
/// The default size limit of one answer, in bytes, enforced while reading.
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 1 << 20;
/// The smallest answer limit accepted: a task report with its envelope must fit.
pub const MIN_RESPONSE_BYTES: usize = 4 << 10;
/// The largest answer limit accepted.
pub const MAX_RESPONSE_BYTES: usize = 64 << 20;
/// Extra headers per server, at most.
pub const MAX_HEADERS: usize = 16;
/// Servers in one configuration, at most.
pub const MAX_SERVERS: usize = 1_000;

/// Which tasks protocol a server speaks.
#[derive(Copy, Clone, PartialEq, Eq, Debug, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Protocol {
    /// Probe with `server/discover` (the 2026-07-28 tasks extension); when the server answers it
    /// as a legacy server would, use the 2025-11-25 `initialize` flow instead. Decided once per
    /// server and remembered; each task keeps the protocol it was created with.
    #[default]
    Auto,
    /// The tasks extension (SEP-2663, protocol 2026-07-28), through rmcp.
    Extension,
    /// Legacy tasks (protocol 2025-11-25) over a session.
    Legacy,
}

/// One MCP server.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    /// The streamable-HTTP endpoint, e.g. `https://tools.example/mcp` (http or https).
    pub url: String,
    /// The protocol (default `auto`).
    #[serde(default)]
    pub protocol: Protocol,
    /// Milliseconds one request may take, to the last byte of the answer (default 10 000,
    /// at most 25 000).
    #[serde(default = "default_timeout_ms")]
    pub request_timeout_ms: u64,
    /// Milliseconds one driver call (submit, get_status, cancel, answer — all its requests
    /// together, connect included) may take; past it the call is `Unavailable` (timeout).
    /// Default: `request_timeout_ms`; at most 25 000.
    #[serde(default)]
    pub call_deadline_ms: Option<u64>,
    /// Bytes one answer may hold; reading stops and the call fails past it, before parsing
    /// (default 1 MiB, 4 KiB to 64 MiB).
    #[serde(default = "default_max_response_bytes")]
    pub max_response_bytes: usize,
    /// Extra request headers (e.g. `Authorization`). Values are secrets: never logged or shown.
    #[serde(default)]
    pub headers: BTreeMap<String, Secret>,
}

fn default_timeout_ms() -> u64 {
    DEFAULT_REQUEST_TIMEOUT.as_millis() as u64
}

fn default_max_response_bytes() -> usize {
    DEFAULT_MAX_RESPONSE_BYTES
}

impl ServerConfig {
    /// A server at `url` with every default.
    pub fn new(url: impl Into<String>) -> Self {
        ServerConfig {
            url: url.into(),
            protocol: Protocol::Auto,
            request_timeout_ms: default_timeout_ms(),
            call_deadline_ms: None,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            headers: BTreeMap::new(),
        }
    }

    /// The same server pinned to `protocol`.
    pub fn with_protocol(mut self, protocol: Protocol) -> Self {
        self.protocol = protocol;
        self
    }

    /// The request timeout.
    pub fn request_timeout(&self) -> Duration {
        Duration::from_millis(self.request_timeout_ms)
    }

    /// The deadline of one driver call (default: the request timeout).
    pub fn call_deadline(&self) -> Duration {
        Duration::from_millis(self.call_deadline_ms.unwrap_or(self.request_timeout_ms))
    }

    fn validate(&self, server: &str) -> Result<(), ConfigError> {
        let bad = |field: &str, why: String| ConfigError {
            server: server.to_owned(),
            field: field.to_owned(),
            reason: why,
        };
        let url = url::Url::parse(&self.url).map_err(|e| bad("url", format!("not a URL ({e})")))?;
        if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
            return Err(bad(
                "url",
                "must be an http or https URL with a host".into(),
            ));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(bad(
                "url",
                "must not carry credentials; use headers instead".into(),
            ));
        }
        let timeout = self.request_timeout();
        if timeout.is_zero() || timeout > MAX_REQUEST_TIMEOUT {
            return Err(bad(
                "request_timeout_ms",
                format!("must be 1 to {} ms", MAX_REQUEST_TIMEOUT.as_millis()),
            ));
        }
        let deadline = self.call_deadline();
        if deadline.is_zero() || deadline > MAX_CALL_DEADLINE {
            return Err(bad(
                "call_deadline_ms",
                format!("must be 1 to {} ms", MAX_CALL_DEADLINE.as_millis()),
            ));
        }
        if !(MIN_RESPONSE_BYTES..=MAX_RESPONSE_BYTES).contains(&self.max_response_bytes) {
            return Err(bad(
                "max_response_bytes",
                format!("must be {MIN_RESPONSE_BYTES} to {MAX_RESPONSE_BYTES}"),
            ));
        }
        if self.headers.len() > MAX_HEADERS {
            return Err(bad("headers", format!("at most {MAX_HEADERS} headers")));
        }
        for (name, value) in &self.headers {
            check_header(name, value).map_err(|why| bad(&format!("headers.{name}"), why))?;
        }
        Ok(())
    }
}

/// Headers the drivers set themselves; a configured header may not replace them.
const RESERVED_HEADERS: [&str; 8] = [
    "accept",
    "content-type",
    "content-length",
    "host",
    "mcp-session-id",
    "mcp-protocol-version",
    "mcp-method",
    "mcp-name",
];

fn check_header(name: &str, value: &Secret) -> Result<(), String> {
    if tasklatch_http::http::HeaderName::from_bytes(name.as_bytes()).is_err() {
        return Err("not a valid header name".into());
    }
    if RESERVED_HEADERS.contains(&name.to_ascii_lowercase().as_str()) || name.starts_with("mcp-") {
        return Err("reserved: the driver sets this header itself".into());
    }
    if tasklatch_http::http::HeaderValue::from_str(value.expose()).is_err() {
        // The value itself is a secret: the reason never quotes it.
        return Err("the value is not a valid header value".into());
    }
    Ok(())
}

/// Every MCP server the driver may reach, by the id tasks name them with.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpConfig {
    /// Servers by id.
    #[serde(default)]
    pub servers: BTreeMap<String, ServerConfig>,
}

impl McpConfig {
    /// Checks every server; the first problem found is returned.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.servers.len() > MAX_SERVERS {
            return Err(ConfigError {
                server: String::new(),
                field: "servers".into(),
                reason: format!("at most {MAX_SERVERS} servers"),
            });
        }
        for (id, server) in &self.servers {
            if id.is_empty() || id.chars().count() > MAX_ID || id.contains('\0') {
                return Err(ConfigError {
                    server: id.clone(),
                    field: "id".into(),
                    reason: format!("a server id must be 1 to {MAX_ID} characters without NUL"),
                });
            }
            server.validate(id)?;
        }
        Ok(())
    }
}

/// A configuration problem: which server, which field, why. Never quotes a header value.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[error("MCP server `{server}`: {field}: {reason}")]
pub struct ConfigError {
    /// The server's id.
    pub server: String,
    /// The field.
    pub field: String,
    /// What is wrong.
    pub reason: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str) -> McpConfig {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn defaults_are_safe_and_valid() {
        let c = parse(r#"{"servers":{"a":{"url":"http://127.0.0.1:1/mcp"}}}"#);
        let s = &c.servers["a"];
        assert_eq!(s.protocol, Protocol::Auto);
        assert_eq!(s.request_timeout(), DEFAULT_REQUEST_TIMEOUT);
        assert_eq!(s.max_response_bytes, DEFAULT_MAX_RESPONSE_BYTES);
        assert!(c.validate().is_ok());
    }

    #[test]
    fn bad_fields_are_refused_with_the_server_and_field_named() {
        let cases = [
            (r#"{"url":"ftp://x/mcp"}"#, "url"),
            (r#"{"url":"http://u:p@x/mcp"}"#, "url"),
            (
                r#"{"url":"http://x/mcp","request_timeout_ms":0}"#,
                "request_timeout_ms",
            ),
            (
                r#"{"url":"http://x/mcp","request_timeout_ms":60000}"#,
                "request_timeout_ms",
            ),
            (
                r#"{"url":"http://x/mcp","max_response_bytes":10}"#,
                "max_response_bytes",
            ),
            (
                r#"{"url":"http://x/mcp","headers":{"Mcp-Session-Id":"x"}}"#,
                "headers.Mcp-Session-Id",
            ),
            (
                r#"{"url":"http://x/mcp","headers":{"bad name":"x"}}"#,
                "headers.bad name",
            ),
        ];
        for (server, field) in cases {
            let c = parse(&format!(r#"{{"servers":{{"s1":{server}}}}}"#));
            let e = c.validate().unwrap_err();
            assert_eq!(
                (e.server.as_str(), e.field.as_str()),
                ("s1", field),
                "{server}"
            );
        }
    }

    #[test]
    fn a_bad_header_value_is_refused_without_quoting_it() {
        let c = parse(
            r#"{"servers":{"s":{"url":"http://x/mcp","headers":{"Authorization":"Bearer TOPSECRET\n"}}}}"#,
        );
        let e = c.validate().unwrap_err();
        assert!(!e.to_string().contains("TOPSECRET"), "{e}");
        assert!(!format!("{c:?}").contains("TOPSECRET"));
    }

    #[test]
    fn unknown_fields_and_protocols_are_refused() {
        assert!(serde_json::from_str::<McpConfig>(
            r#"{"servers":{"s":{"url":"http://x","protocol":"v3"}}}"#
        )
        .is_err());
        assert!(serde_json::from_str::<McpConfig>(
            r#"{"servers":{"s":{"url":"http://x","timeout":1}}}"#
        )
        .is_err());
    }
}
