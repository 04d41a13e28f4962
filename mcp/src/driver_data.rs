//! What the driver keeps with each task (core stores it as the handle's secret driver data):
//! the protocol the task was created with and, for the legacy protocol, the session it lives
//! in. A task is always reached with the protocol it was created with, whatever `auto`
//! decides later.

use serde::{Deserialize, Serialize};
use tasklatch_core::policy::{MAX_DRIVER_DATA, MAX_ID};
use tasklatch_core::ports::DriverError;

/// The driver data of one task.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "protocol", rename_all = "snake_case", deny_unknown_fields)]
pub(crate) enum DriverData {
    /// The tasks extension: no session, every request stands alone.
    Extension,
    /// The server answered the tool call at once: the task was born completed and there is
    /// nothing on the server to ask about later.
    Inline,
    /// The legacy protocol: the task is visible only in this session.
    Legacy {
        /// The `Mcp-Session-Id` (secret).
        session: String,
    },
}

impl DriverData {
    /// The stored text.
    pub(crate) fn encode(&self) -> String {
        let text = serde_json::to_string(self).unwrap_or_default();
        debug_assert!(text.len() <= MAX_DRIVER_DATA);
        text
    }

    /// Reads stored driver data. Data this driver did not write is a protocol error: the task
    /// cannot be reached, so it ends failed (never retried).
    pub(crate) fn decode(text: &str) -> Result<Self, DriverError> {
        serde_json::from_str(text).map_err(|_| {
            DriverError::Malformed("the task's driver data is not this driver's".into())
        })
    }
}

/// Checks an id a server handed out (remote task id or session id) before it is kept: core
/// stores at most [`MAX_ID`] characters, and a header or JSON string must carry it verbatim.
pub(crate) fn check_server_id(what: &str, id: &str) -> Result<(), DriverError> {
    let printable = id.chars().all(|c| c.is_ascii_graphic());
    if id.is_empty() || id.chars().count() > MAX_ID || !printable {
        return Err(DriverError::Malformed(format!(
            "the server's {what} is not 1 to {MAX_ID} printable ASCII characters"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_refuses_foreign_data() {
        for d in [
            DriverData::Extension,
            DriverData::Inline,
            DriverData::Legacy {
                session: "s-123456".into(),
            },
        ] {
            assert!(DriverData::decode(&d.encode()).ok() == Some(d));
        }
        assert!(DriverData::decode("opaque").is_err());
        assert!(DriverData::decode(r#"{"protocol":"legacy"}"#).is_err());
    }

    #[test]
    fn server_ids_must_be_short_printable_ascii() {
        assert!(check_server_id("task id", "abc-123").is_ok());
        for bad in ["", "a b", "é", &"x".repeat(MAX_ID + 1)] {
            assert!(check_server_id("task id", bad).is_err(), "{bad:?}");
        }
    }
}
