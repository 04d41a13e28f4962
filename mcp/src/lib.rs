//! tasklatch-mcp: the MCP Tasks drivers — core's [`tasklatch_core::ports::Driver`] for real
//! MCP servers.
//!
//! [`McpDriver`] routes each call by the task's server id to a configured server
//! ([`McpConfig`]) and speaks the protocol that server speaks:
//!
//! - the **tasks extension** (SEP-2663, protocol 2026-07-28) through rmcp 3.11.0 (client,
//!   streamable HTTP, the `Discover` lifecycle) — [`extension`];
//! - **legacy tasks** (protocol 2025-11-25), which rmcp cannot speak, through a small JSON-RPC
//!   client over streamable HTTP — [`legacy`].
//!
//! Everything a server returns is untrusted: every answer is bounded in bytes while it is read
//! and in time, decoded without `unwrap`, and every text taken from it has the call's secrets
//! (remote task id, session id, header values) cut out before it reaches an error or a report.
//! How server answers map to core's reports is in [`report`]; how failures map to core's
//! errors in [`errors`]; how questions are shown and answered in [`questions`] and
//! [`McpDriver::answer`].
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod config;
mod driver;
mod driver_data;
pub mod errors;
pub mod extension;
mod inline;
pub mod legacy;
pub mod questions;
mod redact;
pub mod report;
mod server;

pub use config::{
    ConfigError, McpConfig, Protocol, ServerConfig, DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_REQUEST_TIMEOUT, MAX_CALL_DEADLINE, MAX_REQUEST_TIMEOUT,
};
pub use driver::{McpDriver, MAX_ANSWER_BYTES, MAX_ARGUMENTS_BYTES};
pub use legacy::{LEGACY_INPUT_REQUEST, SESSION_LOST};
