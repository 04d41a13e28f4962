//! tasklatch-agent-server: the engine's [`tasklatch_core::ports::Launcher`] for the LangGraph
//! Agent Server runs API — the de facto API of agent run servers (threads and runs).
//!
//! A notification is delivered by starting a run on the task's thread whose hidden input
//! carries the notification prompt ([`wire`] documents the message and metadata fields). The
//! server has no idempotency, so [`AgentServerLauncher`] looks the key up among the thread's
//! runs before it creates one (module `lookup`) and looks again after (module `settle`: the
//! oldest run holding the key delivers, newer ones are rolled back); the window that remains,
//! and what bounds it, is described in this crate's `README.md`. Every answer is untrusted: read up to a byte limit,
//! parsed strictly, and reduced to a bounded, secret-free message when it is an error.
//!
//! - [`config`]: settings, defaults and validation (header values are secrets).
//! - [`launcher`]: the port itself, with its outcome table.
//! - [`CheckError`]: the start-up assistant check that disambiguates the server's 404.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod check;
pub mod config;
mod http;
pub mod ids;
pub mod launcher;
mod lookup;
mod settle;
mod text;
pub mod wire;

pub use check::CheckError;
pub use config::{AgentServerConfig, ConfigError, ValidConfig};
pub use launcher::AgentServerLauncher;
