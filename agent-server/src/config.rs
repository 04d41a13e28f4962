//! The launcher's configuration: where the Agent Server is, which assistant runs the
//! notifications, how to authenticate, and the limits on every call.
//!
//! [`AgentServerConfig`] is what an operator writes (any serde format; unknown fields are
//! refused so a typo is not silently ignored). [`AgentServerConfig::validate`] turns it into a
//! [`ValidConfig`] or a [`ConfigError`] that names the field at fault. Header values (API keys,
//! bearer tokens) are secrets: no `Debug`, `Display` or error of this module prints them.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;
use tasklatch_core::policy::Policy;

/// Default whole-call timeout of one launcher call, in milliseconds.
pub const DEFAULT_REQUEST_TIMEOUT_MS: u64 = 10_000;
/// The longest whole-call timeout accepted, in milliseconds.
pub const MAX_REQUEST_TIMEOUT_MS: u64 = 60_000;
/// Default byte limit of one answer.
pub const DEFAULT_MAX_ANSWER_BYTES: usize = 1 << 20;
/// Smallest byte limit accepted (an answer with a run in it is larger than this).
pub const MIN_ANSWER_BYTES: usize = 4 << 10;
/// Largest byte limit accepted.
pub const MAX_ANSWER_BYTES: usize = 64 << 20;
/// Default runs per lookup page.
pub const DEFAULT_LOOKUP_PAGE_SIZE: u32 = 20;
/// Largest lookup page accepted.
pub const MAX_LOOKUP_PAGE_SIZE: u32 = 200;
/// Default pages a lookup reads at most.
pub const DEFAULT_LOOKUP_PAGE_LIMIT: u32 = 5;
/// Largest page limit accepted.
pub const MAX_LOOKUP_PAGE_LIMIT: u32 = 50;
/// Most headers the launcher sends on its own behalf.
pub const MAX_HEADERS: usize = 16;
/// Longest assistant id (a graph name or a UUID) or owner metadata key.
pub const MAX_NAME_LEN: usize = 200;
/// The thread metadata key that names a thread's owner unless configured otherwise (what
/// LangGraph's auth examples record).
pub const DEFAULT_OWNER_METADATA_KEY: &str = "owner";

/// The launcher's settings, as an operator writes them.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentServerConfig {
    /// The server's root URL, `http://` or `https://`, without credentials, query or fragment
    /// (e.g. `http://127.0.0.1:2024`). Required.
    pub base_url: String,
    /// The assistant (a graph name such as `agent`, or an assistant UUID) every notification run
    /// uses. Required.
    pub assistant_id: String,
    /// Headers sent with every request, typically `x-api-key` or `authorization`. Secret: never
    /// logged, never part of an error.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// The whole-call timeout of one launcher call (lookup pages and create together), in
    /// milliseconds. Must stay well inside the notification lease: see [`ValidConfig::fits`].
    #[serde(default = "default_timeout")]
    pub request_timeout_ms: u64,
    /// The most bytes read from one answer; a longer answer is refused while it is read,
    /// before anything is parsed.
    #[serde(default = "default_max_answer_bytes")]
    pub max_answer_bytes: usize,
    /// Runs asked for per page when looking a key up among the thread's runs.
    #[serde(default = "default_page_size")]
    pub lookup_page_size: u32,
    /// Pages read at most per lookup (newest runs first).
    #[serde(default = "default_page_limit")]
    pub lookup_page_limit: u32,
    /// The thread metadata key that names the thread's owner (default `owner`, as LangGraph's
    /// auth examples record it). While [`Self::check_thread_owner`] holds, a task is accepted
    /// and a run started only on a thread whose metadata holds the task's owner under this key.
    #[serde(default = "default_owner_key")]
    pub owner_metadata_key: String,
    /// Whether thread ownership is checked (default `true`). `false` is the explicit opt-out
    /// for single-user deployments, where every thread belongs to the one user: then any
    /// thread the server can hold (a UUID) is accepted without asking the server.
    #[serde(default = "default_true")]
    pub check_thread_owner: bool,
}

fn default_owner_key() -> String {
    DEFAULT_OWNER_METADATA_KEY.to_owned()
}

fn default_true() -> bool {
    true
}

fn default_timeout() -> u64 {
    DEFAULT_REQUEST_TIMEOUT_MS
}

fn default_max_answer_bytes() -> usize {
    DEFAULT_MAX_ANSWER_BYTES
}

fn default_page_size() -> u32 {
    DEFAULT_LOOKUP_PAGE_SIZE
}

fn default_page_limit() -> u32 {
    DEFAULT_LOOKUP_PAGE_LIMIT
}

impl AgentServerConfig {
    /// The defaults for everything but the server and the assistant.
    pub fn new(base_url: impl Into<String>, assistant_id: impl Into<String>) -> Self {
        AgentServerConfig {
            base_url: base_url.into(),
            assistant_id: assistant_id.into(),
            headers: BTreeMap::new(),
            request_timeout_ms: DEFAULT_REQUEST_TIMEOUT_MS,
            max_answer_bytes: DEFAULT_MAX_ANSWER_BYTES,
            lookup_page_size: DEFAULT_LOOKUP_PAGE_SIZE,
            lookup_page_limit: DEFAULT_LOOKUP_PAGE_LIMIT,
            owner_metadata_key: default_owner_key(),
            check_thread_owner: true,
        }
    }

    /// Checks every field; the error names the first field at fault (never a header value).
    pub fn validate(&self) -> Result<ValidConfig, ConfigError> {
        let base_url = check_base_url(&self.base_url)?;
        check_name("assistant_id", &self.assistant_id)?;
        check_name("owner_metadata_key", &self.owner_metadata_key)?;
        let headers = check_headers(&self.headers)?;
        in_range(
            "request_timeout_ms",
            self.request_timeout_ms,
            1,
            MAX_REQUEST_TIMEOUT_MS,
        )?;
        in_range(
            "max_answer_bytes",
            self.max_answer_bytes as u64,
            MIN_ANSWER_BYTES as u64,
            MAX_ANSWER_BYTES as u64,
        )?;
        in_range(
            "lookup_page_size",
            self.lookup_page_size.into(),
            1,
            MAX_LOOKUP_PAGE_SIZE.into(),
        )?;
        in_range(
            "lookup_page_limit",
            self.lookup_page_limit.into(),
            1,
            MAX_LOOKUP_PAGE_LIMIT.into(),
        )?;
        Ok(ValidConfig {
            base_url,
            assistant_id: self.assistant_id.clone(),
            headers,
            request_timeout: Duration::from_millis(self.request_timeout_ms),
            max_answer_bytes: self.max_answer_bytes,
            lookup_page_size: self.lookup_page_size,
            lookup_page_limit: self.lookup_page_limit,
            owner_metadata_key: self
                .check_thread_owner
                .then(|| self.owner_metadata_key.clone()),
        })
    }
}

impl fmt::Debug for AgentServerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentServerConfig")
            .field("base_url", &self.base_url)
            .field("assistant_id", &self.assistant_id)
            .field("headers", &RedactedHeaders(&self.headers))
            .field("request_timeout_ms", &self.request_timeout_ms)
            .field("max_answer_bytes", &self.max_answer_bytes)
            .field("lookup_page_size", &self.lookup_page_size)
            .field("lookup_page_limit", &self.lookup_page_limit)
            .field("owner_metadata_key", &self.owner_metadata_key)
            .field("check_thread_owner", &self.check_thread_owner)
            .finish()
    }
}

/// Header names with their values replaced by `<redacted>`.
struct RedactedHeaders<'a>(&'a BTreeMap<String, String>);

impl fmt::Debug for RedactedHeaders<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.0.keys().map(|k| (k, "<redacted>")))
            .finish()
    }
}

/// A checked configuration. Its `Debug` prints header names only.
#[derive(Clone)]
pub struct ValidConfig {
    /// The root URL, without a trailing slash.
    pub base_url: String,
    /// The assistant every run uses.
    pub assistant_id: String,
    /// Headers sent with every request (name, secret value), names lower-case.
    pub headers: Vec<(String, String)>,
    /// The whole-call timeout of one launcher call.
    pub request_timeout: Duration,
    /// The most bytes read from one answer.
    pub max_answer_bytes: usize,
    /// Runs per lookup page.
    pub lookup_page_size: u32,
    /// Pages per lookup.
    pub lookup_page_limit: u32,
    /// The metadata key naming a thread's owner, or `None` when ownership is not checked
    /// ([`AgentServerConfig::check_thread_owner`] is `false`).
    pub owner_metadata_key: Option<String>,
}

impl ValidConfig {
    /// Whether a launcher call always ends while the engine's lease still holds: a call takes
    /// at most two timeouts (lookup and create, then the second look and its rollbacks), which
    /// must be shorter than the lease margin the engine requires before it calls out
    /// (`min_lease_left`), itself shorter than the notification lease.
    pub fn fits(&self, policy: &Policy) -> Result<(), ConfigError> {
        if 2 * self.request_timeout >= policy.min_lease_left
            || policy.min_lease_left >= policy.notify_lease
        {
            return Err(ConfigError::Invalid {
                field: "request_timeout_ms",
                reason: format!(
                    "twice {} ms (a call's two looks) must be below the engine's min_lease_left \
                     ({} ms), itself below the notify lease ({} ms)",
                    self.request_timeout.as_millis(),
                    policy.min_lease_left.as_millis(),
                    policy.notify_lease.as_millis()
                ),
            });
        }
        Ok(())
    }
}

impl fmt::Debug for ValidConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|(k, _)| k.as_str()).collect();
        f.debug_struct("ValidConfig")
            .field("base_url", &self.base_url)
            .field("assistant_id", &self.assistant_id)
            .field("header_names", &names)
            .field("request_timeout", &self.request_timeout)
            .field("max_answer_bytes", &self.max_answer_bytes)
            .field("lookup_page_size", &self.lookup_page_size)
            .field("lookup_page_limit", &self.lookup_page_limit)
            .field("owner_metadata_key", &self.owner_metadata_key)
            .finish()
    }
}

/// A configuration the launcher cannot run with. Never holds a header value.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub enum ConfigError {
    /// A field breaks its rule.
    #[error("agent server config: `{field}` {reason}")]
    Invalid {
        /// The field at fault.
        field: &'static str,
        /// What is wrong with it.
        reason: String,
    },
}

fn invalid(field: &'static str, reason: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        field,
        reason: reason.into(),
    }
}

fn check_base_url(url: &str) -> Result<String, ConfigError> {
    let field = "base_url";
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .ok_or_else(|| invalid(field, "must start with http:// or https://"))?;
    let host = rest.split('/').next().unwrap_or_default();
    if host.is_empty() {
        return Err(invalid(field, "has no host"));
    }
    if host.contains('@') {
        return Err(invalid(
            field,
            "must not carry credentials; put them in `headers`",
        ));
    }
    if rest.contains(['?', '#']) || url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(invalid(
            field,
            "must not have a query, a fragment, spaces or control characters",
        ));
    }
    if url.len() > 2_000 {
        return Err(invalid(field, "is longer than 2000 characters"));
    }
    Ok(url.trim_end_matches('/').to_owned())
}

fn check_name(field: &'static str, value: &str) -> Result<(), ConfigError> {
    if value.is_empty() || value.chars().count() > MAX_NAME_LEN {
        return Err(invalid(
            field,
            format!("must be 1 to {MAX_NAME_LEN} characters"),
        ));
    }
    if value.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err(invalid(field, "must not hold spaces or control characters"));
    }
    Ok(())
}

fn check_headers(headers: &BTreeMap<String, String>) -> Result<Vec<(String, String)>, ConfigError> {
    let field = "headers";
    if headers.len() > MAX_HEADERS {
        return Err(invalid(
            field,
            format!("has more than {MAX_HEADERS} entries"),
        ));
    }
    let mut out = Vec::with_capacity(headers.len());
    for (name, value) in headers {
        let lower = name.to_ascii_lowercase();
        if tasklatch_http::http::HeaderName::from_bytes(lower.as_bytes()).is_err() {
            return Err(invalid(
                field,
                format!("has an invalid header name {name:?}"),
            ));
        }
        if matches!(lower.as_str(), "content-type" | "content-length" | "host") {
            return Err(invalid(field, format!("must not set {name:?}")));
        }
        if tasklatch_http::http::HeaderValue::from_str(value).is_err() || value.is_empty() {
            // The value is a secret: name the header, never the value.
            return Err(invalid(
                field,
                format!("has an empty or invalid value for {name:?}"),
            ));
        }
        out.push((lower, value.clone()));
    }
    Ok(out)
}

fn in_range(field: &'static str, value: u64, min: u64, max: u64) -> Result<(), ConfigError> {
    if value < min || value > max {
        return Err(invalid(
            field,
            format!("must be between {min} and {max}, not {value}"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str) -> Result<AgentServerConfig, String> {
        serde_json::from_str(json).map_err(|e| e.to_string())
    }

    #[test]
    fn defaults_fill_everything_but_the_server_and_the_assistant() {
        let c = parse(r#"{"base_url":"http://127.0.0.1:2024/","assistant_id":"agent"}"#)
            .unwrap_or_else(|e| panic!("{e}"));
        let v = c.validate().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(v.base_url, "http://127.0.0.1:2024");
        assert_eq!(v.request_timeout, Duration::from_secs(10));
        assert_eq!(v.max_answer_bytes, DEFAULT_MAX_ANSWER_BYTES);
        assert_eq!(v.lookup_page_size, DEFAULT_LOOKUP_PAGE_SIZE);
        assert_eq!(v.lookup_page_limit, DEFAULT_LOOKUP_PAGE_LIMIT);
        assert_eq!(v.owner_metadata_key.as_deref(), Some("owner"));
        assert!(v.fits(&Policy::default()).is_ok());
    }

    #[test]
    fn missing_and_unknown_fields_are_refused() {
        assert!(parse(r#"{"assistant_id":"agent"}"#).is_err_and(|e| e.contains("base_url")));
        assert!(
            parse(r#"{"base_url":"http://h","assistant_id":"a","timeout":5}"#)
                .is_err_and(|e| e.contains("timeout"))
        );
    }

    #[test]
    fn each_rule_names_its_field() {
        let field_of = |c: AgentServerConfig| match c.validate() {
            Err(ConfigError::Invalid { field, .. }) => field,
            Ok(_) => "valid",
        };
        let base = AgentServerConfig::new("http://127.0.0.1:2024", "agent");
        let cases: Vec<(AgentServerConfig, &str)> = vec![
            (AgentServerConfig::new("ftp://h", "a"), "base_url"),
            (AgentServerConfig::new("http://u:p@h", "a"), "base_url"),
            (AgentServerConfig::new("http://h/?x=1", "a"), "base_url"),
            (AgentServerConfig::new("http://h", ""), "assistant_id"),
            (AgentServerConfig::new("http://h", "a b"), "assistant_id"),
            (
                AgentServerConfig {
                    request_timeout_ms: 0,
                    ..base.clone()
                },
                "request_timeout_ms",
            ),
            (
                AgentServerConfig {
                    max_answer_bytes: 10,
                    ..base.clone()
                },
                "max_answer_bytes",
            ),
            (
                AgentServerConfig {
                    lookup_page_size: 0,
                    ..base.clone()
                },
                "lookup_page_size",
            ),
            (
                AgentServerConfig {
                    lookup_page_limit: 1_000,
                    ..base.clone()
                },
                "lookup_page_limit",
            ),
            (
                AgentServerConfig {
                    owner_metadata_key: String::new(),
                    ..base.clone()
                },
                "owner_metadata_key",
            ),
            (base, "valid"),
        ];
        for (config, field) in cases {
            assert_eq!(field_of(config.clone()), field, "{config:?}");
        }
    }

    #[test]
    fn header_values_never_reach_debug_or_errors() {
        let secret = "sk-PLANTED-API-KEY-0453";
        let mut c = AgentServerConfig::new("http://h", "a");
        c.headers.insert("X-Api-Key".into(), secret.into());
        assert!(!format!("{c:?}").contains(secret));
        let v = c.validate().unwrap_or_else(|e| panic!("{e}"));
        assert!(!format!("{v:?}").contains(secret));
        assert_eq!(v.headers, vec![("x-api-key".to_owned(), secret.to_owned())]);
        c.headers
            .insert("authorization".into(), format!("Bearer {secret}\n"));
        let e = c
            .validate()
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("authorization") && !e.contains(secret), "{e}");
    }

    #[test]
    fn a_timeout_past_the_lease_margin_does_not_fit() {
        let policy = Policy::default();
        let margin = policy.min_lease_left.as_millis() as u64;
        for (ms, fits) in [
            (margin / 2 - 1, true),
            (margin / 2, false),
            (margin - 1, false),
        ] {
            let c = AgentServerConfig {
                request_timeout_ms: ms,
                ..AgentServerConfig::new("http://h", "a")
            };
            let v = c.validate().unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(
                v.fits(&policy).is_ok(),
                fits,
                "{ms} ms: two looks must fit the margin"
            );
        }
    }
}
