//! Shared by the configuration's unit tests: the smallest file that passes, and its checking.

use crate::config::{parse, Settings};

/// The smallest valid file (one token, one MCP server, the Agent Server); its database URL
/// holds a planted password that no error text may repeat.
pub(crate) const BASE: &str = r#"
    [database]
    url = "postgres://u:PLANTED-DB-PASSWORD@127.0.0.1/db"
    [auth]
    tokens = [{ owner = "alice", sha256 = "2bd806c97f0e00af1a1fc3328fa763a9269723c8db8fac4f93af71db186d6e90" }]
    [servers.research]
    url = "http://127.0.0.1:1/mcp"
    [agent_server]
    base_url = "http://127.0.0.1:2"
    assistant_id = "agent"
"#;

/// `text` parsed (no environment) and checked; the error as its message.
pub(crate) fn check(text: &str) -> Result<Settings, String> {
    let c = parse(text, &|_| None).map_err(|e| e.to_string())?;
    Settings::check(c).map_err(|e| e.to_string())
}

/// `extra` (top-level tables) ahead of [`BASE`], checked.
pub(crate) fn check_with(extra: &str) -> Result<Settings, String> {
    check(&format!("{extra}\n{BASE}"))
}
