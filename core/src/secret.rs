//! Values that must never leave the engine: the remote task handle and driver data.
//!
//! `Secret` has no `Display`, and its `Debug` prints a fixed placeholder, so a secret cannot
//! reach a log line, an error message or a `{:?}` by accident. Reading it needs an explicit
//! [`Secret::expose`], which only the driver side and the stores call.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A string that is redacted in every formatted output.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret value.
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The secret itself. Callers must not format, log or return it to users.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

/// The remote server's handle for a task: everything a driver needs to reach it again.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct RemoteHandle {
    /// The remote server's own task id.
    pub remote_task_id: Secret,
    /// Opaque per-task data the driver keeps (tokens, session ids…).
    pub driver_data: Secret,
}

impl RemoteHandle {
    /// Replaces every occurrence of a secret of this handle in `text` with `[redacted]`.
    ///
    /// Remote servers may echo their own ids back inside results or errors; those texts are
    /// untrusted and reach users, so the handle's secrets are cut out of them before storing.
    pub fn redact(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for secret in [self.remote_task_id.expose(), self.driver_data.expose()] {
            if secret.len() >= MIN_REDACTABLE && out.contains(secret) {
                out = out.replace(secret, "[redacted]");
            }
        }
        out
    }
}

/// Secrets shorter than this are not searched for: a one-letter id would redact every text.
const MIN_REDACTABLE: usize = 6;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_the_value_and_redact_cuts_it_out() {
        let h = RemoteHandle {
            remote_task_id: Secret::new("rt-SECRET-123"),
            driver_data: Secret::new("drv-TOKEN-9"),
        };
        let dbg = format!("{h:?}");
        assert!(!dbg.contains("SECRET") && !dbg.contains("TOKEN"));
        assert_eq!(
            h.redact("id rt-SECRET-123 and drv-TOKEN-9!"),
            "id [redacted] and [redacted]!"
        );
        let short = RemoteHandle {
            remote_task_id: Secret::new("a"),
            driver_data: Secret::new(""),
        };
        assert_eq!(short.redact("banana"), "banana");
    }
}
