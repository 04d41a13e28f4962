//! `[agent_tools]` checked: whether `/mcp` is served, the header the thread comes from, the
//! read-only mode, and the `Host` values `/mcp` accepts.
//!
//! The thread header must be a valid header name that nothing else in the request path sets:
//! not `authorization`, not the trusted proxy's owner header, not a header of HTTP itself or of
//! the MCP transport (`mcp-*`). Names are compared in lower case.
//!
//! `/mcp` checks the `Host` of every request against a list (rmcp's guard against DNS
//! rebinding, where a web page makes a browser send requests to a server on its own machine):
//! the loopback names (`localhost`, `127.0.0.1`, `::1`), the IP address of `http.listen` when
//! it names one (not `0.0.0.0` or `::`), and every `agent_tools.allowed_hosts` entry (`name`
//! or `name:port`, without a port any port matches). A worker reached by another name (a
//! container's service name, a load balancer's) needs that name listed: other hosts get 403.

use super::file::AgentToolsSection;
use super::load::ConfigError;
use super::settings::Auth;
use axum::http::uri::Authority;
use axum::http::HeaderName;
use std::net::SocketAddr;
use std::str::FromStr;

/// The `Host` values accepted whatever the configuration.
const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];
/// Headers the HTTP or MCP transports set themselves: never the thread's.
const RESERVED_HEADERS: [&str; 9] = [
    "authorization",
    "host",
    "content-type",
    "content-length",
    "accept",
    "cookie",
    "origin",
    "last-event-id",
    "connection",
];
/// `agent_tools.allowed_hosts` entries, at most.
const MAX_ALLOWED_HOSTS: usize = 100;

/// The agent tools as the worker serves them (`[agent_tools]` with `enabled = true`).
#[derive(Clone, Debug)]
pub struct AgentTools {
    /// The request header naming the run's thread (lower case).
    pub thread_header: HeaderName,
    /// Only the reading tools are listed and served.
    pub read_only: bool,
    /// Every `Host` value `/mcp` accepts: the loopback names, the listen address's IP when it
    /// names one, then the configured entries.
    pub allowed_hosts: Vec<String>,
}

impl AgentTools {
    /// Checks `section` (also when it is disabled, so that switching it on later meets no
    /// surprise) against the listen address and the API's authentication; `Ok(None)` when
    /// `/mcp` is not served.
    pub(super) fn check(
        section: &AgentToolsSection,
        listen: SocketAddr,
        auth: &Auth,
    ) -> Result<Option<AgentTools>, ConfigError> {
        let thread_header = thread_header(&section.thread_header, auth)?;
        let allowed_hosts = allowed_hosts(&section.allowed_hosts, listen)?;
        Ok(section.enabled.then_some(AgentTools {
            thread_header,
            read_only: section.read_only,
            allowed_hosts,
        }))
    }
}

fn thread_header(name: &str, auth: &Auth) -> Result<HeaderName, ConfigError> {
    let place = "agent_tools.thread_header";
    let lower = name.to_ascii_lowercase();
    let header = HeaderName::from_str(&lower)
        .map_err(|_| ConfigError::new(place, "must be a valid HTTP header name"))?;
    let proxy = matches!(auth, Auth::TrustedProxy(owner) if *owner == lower);
    if RESERVED_HEADERS.contains(&lower.as_str()) || lower.starts_with("mcp-") || proxy {
        return Err(ConfigError::new(
            place,
            "must be a header of its own: not authorization, not auth.proxy_header, not one \
             HTTP or the MCP transport sets (host, content-type, accept, mcp-*, …)",
        ));
    }
    Ok(header)
}

fn allowed_hosts(entries: &[String], listen: SocketAddr) -> Result<Vec<String>, ConfigError> {
    if entries.len() > MAX_ALLOWED_HOSTS {
        return Err(ConfigError::new(
            "agent_tools.allowed_hosts",
            format!("at most {MAX_ALLOWED_HOSTS} entries"),
        ));
    }
    let mut hosts: Vec<String> = LOOPBACK_HOSTS.iter().map(|h| (*h).to_owned()).collect();
    let ip = listen.ip();
    if !ip.is_unspecified() && !ip.is_loopback() {
        hosts.push(ip.to_string());
    }
    for (i, entry) in entries.iter().enumerate() {
        let usable =
            !entry.contains('@') && Authority::from_str(entry).is_ok_and(|a| !a.host().is_empty());
        if !usable {
            return Err(ConfigError::new(
                format!("agent_tools.allowed_hosts[{i}]"),
                "must be a host name or address, optionally with :port",
            ));
        }
        hosts.push(entry.to_ascii_lowercase());
    }
    Ok(hosts)
}

#[cfg(test)]
mod tests {
    use crate::config::test_support::{check as check_text, check_with as check, BASE};

    #[test]
    fn the_tools_are_off_by_default_and_on_with_safe_defaults() {
        let s = check("").unwrap_or_else(|e| panic!("{e}"));
        assert!(s.agent_tools.is_none());
        let s = check("[agent_tools]\nenabled = true").unwrap_or_else(|e| panic!("{e}"));
        let t = s.agent_tools.unwrap_or_else(|| panic!("enabled"));
        assert_eq!(t.thread_header.as_str(), "x-tasklatch-thread");
        assert!(!t.read_only);
        assert_eq!(t.allowed_hosts, ["localhost", "127.0.0.1", "::1"]);
    }

    #[test]
    fn the_keys_are_read_and_the_listen_address_is_allowed() {
        let s = check(
            "[http]\nlisten = \"10.1.2.3:8080\"\n[agent_tools]\nenabled = true\n\
             thread_header = \"X-Run-Thread\"\nread_only = true\n\
             allowed_hosts = [\"Worker.internal\", \"tasks.example:443\"]",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let t = s.agent_tools.unwrap_or_else(|| panic!("enabled"));
        assert_eq!(t.thread_header.as_str(), "x-run-thread");
        assert!(t.read_only);
        assert_eq!(
            t.allowed_hosts,
            [
                "localhost",
                "127.0.0.1",
                "::1",
                "10.1.2.3",
                "worker.internal",
                "tasks.example:443"
            ]
        );
        let any = check("[http]\nlisten = \"0.0.0.0:8080\"\n[agent_tools]\nenabled = true")
            .unwrap_or_else(|e| panic!("{e}"));
        let t = any.agent_tools.unwrap_or_else(|| panic!("enabled"));
        assert_eq!(t.allowed_hosts.len(), 3, "0.0.0.0 is no host name");
    }

    #[test]
    fn a_bad_header_or_host_is_refused_with_its_key_even_when_disabled() {
        for (extra, place) in [
            ("thread_header = \"\"", "agent_tools.thread_header"),
            ("thread_header = \"x thread\"", "agent_tools.thread_header"),
            (
                "thread_header = \"Authorization\"",
                "agent_tools.thread_header",
            ),
            (
                "thread_header = \"mcp-session-id\"",
                "agent_tools.thread_header",
            ),
            ("thread_header = \"host\"", "agent_tools.thread_header"),
            ("allowed_hosts = [\"\"]", "agent_tools.allowed_hosts[0]"),
            (
                "allowed_hosts = [\"ok\", \"u@evil\"]",
                "agent_tools.allowed_hosts[1]",
            ),
            ("allowed_hosts = [\"a b\"]", "agent_tools.allowed_hosts[0]"),
        ] {
            let e = check(&format!("[agent_tools]\n{extra}"))
                .err()
                .unwrap_or_default();
            assert!(e.contains(place), "{extra}: {e}");
        }
        let e = check("[agent_tools]\nenable = true")
            .err()
            .unwrap_or_default();
        assert!(e.contains("unknown field `enable`"), "{e}");
    }

    #[test]
    fn the_thread_header_cannot_be_the_proxy_owner_header() {
        let proxy = BASE.replace(
            "tokens = [{ owner = \"alice\", sha256 = \"2bd806c97f0e00af1a1fc3328fa763a9269723c8db8fac4f93af71db186d6e90\" }]",
            "mode = \"trusted_proxy\"\nproxy_header = \"x-user\"",
        );
        let text = format!("[agent_tools]\nenabled = true\nthread_header = \"X-User\"\n{proxy}");
        let e = check_text(&text).err().unwrap_or_default();
        assert!(e.contains("agent_tools.thread_header"), "{e}");
    }
}
