//! Values that must never leave the engine: the remote task handle and driver data.
//!
//! `Secret` is unprintable by construction: no `Display`, a `Debug` that prints a fixed
//! placeholder, and no `Serialize`, so a secret cannot reach a log line, an error message, a
//! `{:?}` or a JSON document by accident. Reading it needs an explicit [`Secret::expose`], which
//! only the driver side and the stores call; the one serialiser of the value is the stores' row
//! codec, [`crate::row_codec`].

use crate::mutation::{self, planted, Mutant};
use crate::redaction;
use serde::{Deserialize, Serialize};
use std::fmt;

/// A string that is redacted in every formatted output.
///
/// It implements `Deserialize` (a secret may be read from a configuration file or a store's
/// rows) but never `Serialize`: a row type that must carry the value names
/// [`crate::row_codec`] on the field, and nothing else can write it out.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize)]
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
///
/// Serialised (as part of a store's rows) only through [`crate::row_codec`].
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct RemoteHandle {
    /// The remote server's own task id.
    #[serde(serialize_with = "crate::row_codec::secret")]
    pub remote_task_id: Secret,
    /// Opaque per-task data the driver keeps (tokens, session ids…).
    #[serde(serialize_with = "crate::row_codec::secret")]
    pub driver_data: Secret,
}

impl RemoteHandle {
    /// The handle of a task whose remote call has not been recorded yet: a submit's intent row
    /// (DOMAIN §7) carries it from before the remote call until the handle is stored. Both
    /// parts are empty; a driver never returns an empty remote id (the submit refuses one), so
    /// it stands for nothing remote, and no loop calls a driver with it.
    pub fn unrecorded() -> Self {
        RemoteHandle {
            remote_task_id: Secret::new(""),
            driver_data: Secret::new(""),
        }
    }

    /// Whether this is [`RemoteHandle::unrecorded`]: no remote task is known for the row.
    pub fn is_unrecorded(&self) -> bool {
        self.remote_task_id.expose().is_empty()
    }

    /// `text` with this handle's secrets cut out, each cut run replaced by `[redacted]`.
    ///
    /// Remote servers may echo their own ids back inside results or errors; those texts are
    /// untrusted and reach users, so the handle's secrets are cut out of them before storing.
    /// Both secrets are matched in the original text and cut together (driver data that
    /// contains the remote id is cut whole); a short remote id is cut where it stands as a
    /// token, and any long-enough piece of a secret is cut too ([`redaction`] has the rules and
    /// the cost).
    pub fn redact(&self, text: &str) -> String {
        let secrets = [self.remote_task_id.expose(), self.driver_data.expose()];
        let redacted = redaction::redact(text, &secrets);
        mutation::substitute(Mutant::RedactionShortestFirst, redacted, |_| {
            planted::whole_secrets_shortest_first(text, secrets)
        })
    }
}

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

    /// Issue 11 item 7: driver data holding the remote id, a short numeric remote id, and an
    /// echo that only repeats part of a token.
    #[test]
    fn redact_cuts_nested_short_and_partial_secrets() {
        let nested = RemoteHandle {
            remote_task_id: Secret::new("rem-77-abcdef"),
            driver_data: Secret::new("sess-TOKEN-31337:rem-77-abcdef"),
        };
        assert_eq!(
            nested.redact("id rem-77-abcdef data sess-TOKEN-31337:rem-77-abcdef."),
            "id [redacted] data [redacted]."
        );
        let numeric = RemoteHandle {
            remote_task_id: Secret::new("42"),
            driver_data: Secret::new("sess-TOKEN-0042/42"),
        };
        assert_eq!(
            numeric.redact("task 42 done, 1420 left; data sess-TOKEN-0042/42"),
            "task [redacted] done, 1420 left; data [redacted]"
        );
        assert_eq!(
            numeric.redact("token sess-TOKEN-00… expired"),
            "token [redacted]… expired"
        );
    }
}
