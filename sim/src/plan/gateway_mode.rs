//! Which launcher peer the `gateway` host plays: our own idempotent run ledger, or a server
//! that behaves like the LangGraph Agent Server (no idempotency by key).

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// The gateway's behaviour. Part of the plan (absent from a plan's JSON when `ledger`, so
/// plans, traces and history hashes of ledger runs are what they were before modes existed).
#[derive(Copy, Clone, PartialEq, Eq, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GatewayMode {
    /// The run ledger (memory or Postgres): the same key always yields the same run.
    #[default]
    Ledger,
    /// Like the LangGraph Agent Server: runs carry the key in their metadata, listed per
    /// thread newest first in bounded pages; two creates with one key make two runs; a create
    /// without the `reject` strategy on a busy thread is queued; one 404 for a missing thread
    /// or assistant. The workers' launcher looks the key up, creates, and looks again.
    Langgraph,
}

impl GatewayMode {
    /// The default mode (serde's `skip_serializing_if`).
    pub fn is_ledger(&self) -> bool {
        *self == GatewayMode::Ledger
    }

    /// The `--gateway` spelling.
    pub fn name(self) -> &'static str {
        match self {
            GatewayMode::Ledger => "ledger",
            GatewayMode::Langgraph => "langgraph",
        }
    }
}

impl fmt::Display for GatewayMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for GatewayMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "ledger" => Ok(GatewayMode::Ledger),
            "langgraph" => Ok(GatewayMode::Langgraph),
            _ => Err(format!(
                "unknown gateway mode {s:?}; known: ledger, langgraph"
            )),
        }
    }
}
