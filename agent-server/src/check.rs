//! Checks that disambiguate the server's 404: the assistant exists (once at start-up, and again
//! whenever a create answers 404), and — unless switched off — the thread belongs to the owner.
//!
//! The Agent Server answers the same `404 Thread or assistant not found.` for a missing thread
//! and for a missing assistant. A missing thread is permanent for that notification (dead
//! letter); a missing assistant is the operator's mistake and must not dead-letter every
//! notification on every thread. So the launcher asks [`assistant_exists`] again before it
//! calls a 404 on create "thread gone" — that is what keeps the two apart — and the worker
//! calls it (through `AgentServerLauncher::check`) at start to catch the mistake early: a
//! definite answer ([`CheckError::is_definite`]: no such assistant, credentials refused)
//! refuses the start, while a server that cannot be asked only defers the check (the worker
//! starts and retries it in the background; launches meanwhile fail and back off).

use crate::config::ValidConfig;
use crate::http::{CallError, Http};
use crate::ids::is_uuid;
use serde_json::{json, Value};
use tasklatch_core::ids::{OwnerId, ThreadId};

/// Why the start-up check failed. Messages hold no header value and at most a bounded detail
/// of the server's words.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub enum CheckError {
    /// The server answered, and has no such assistant (or no such graph).
    #[error("agent server: assistant {0:?} not found")]
    AssistantMissing(String),
    /// The server refused our credentials.
    #[error("agent server: access refused (HTTP {0}); check the configured headers")]
    Unauthorized(u16),
    /// The server did not answer usefully.
    #[error("agent server: {0}")]
    Unavailable(String),
}

/// Whether the configured assistant exists. An assistant UUID is read directly
/// (`GET /assistants/{id}`); a graph name is looked up among the graph's system-created
/// default assistants (`POST /assistants/search`), which is what the server resolves a graph
/// name to when it creates a run.
pub async fn assistant_exists(http: &Http, cfg: &ValidConfig) -> Result<(), CheckError> {
    let id = &cfg.assistant_id;
    let answer = if is_uuid(id) {
        http.get(&format!("/assistants/{id}")).await
    } else {
        let query = json!({
            "graph_id": id,
            "metadata": { "created_by": "system" },
            "limit": 1,
            "select": ["assistant_id"],
        });
        http.post("/assistants/search", &query).await
    }
    .map_err(unavailable)?;
    let missing = || CheckError::AssistantMissing(id.clone());
    match answer.status {
        200 if is_uuid(id) => Ok(()),
        200 => match serde_json::from_slice::<Value>(&answer.body) {
            Ok(Value::Array(found)) if !found.is_empty() => Ok(()),
            Ok(Value::Array(_)) => Err(missing()),
            _ => Err(CheckError::Unavailable(
                "the assistant search answer is not a list".into(),
            )),
        },
        404 => Err(missing()),
        401 | 403 => Err(CheckError::Unauthorized(answer.status)),
        status => Err(CheckError::Unavailable(format!(
            "assistant check: HTTP {status}: {}",
            http.redactor().body_detail(&answer.body)
        ))),
    }
}

impl CheckError {
    /// Whether the server gave a definite answer — the assistant does not exist, or our
    /// credentials are refused: a configuration to fix, which asking again will not change.
    /// `false` for [`CheckError::Unavailable`] (no connection, a timeout, an unexpected status
    /// or answer): the check can be made again later.
    pub fn is_definite(&self) -> bool {
        matches!(
            self,
            CheckError::AssistantMissing(_) | CheckError::Unauthorized(_)
        )
    }
}

fn unavailable(e: CallError) -> CheckError {
    CheckError::Unavailable(format!("assistant check: {e}"))
}

/// The thread's owner check under metadata `key`: `Ok(true)` when the thread exists and its
/// metadata holds `owner` under that key, `Ok(false)` when it does not exist, has no owner or
/// belongs to someone else (all "gone" for this owner), `Err` when the server could not tell.
/// `thread` must be a validated UUID.
pub async fn thread_owned_by(
    http: &Http,
    key: &str,
    thread: &ThreadId,
    owner: &OwnerId,
) -> Result<bool, String> {
    let answer = http
        .get(&format!("/threads/{thread}"))
        .await
        .map_err(|e| format!("thread check: {e}"))?;
    match answer.status {
        200 => {
            let value: Value = serde_json::from_slice(&answer.body)
                .map_err(|_| "thread check: the answer is not JSON".to_owned())?;
            let recorded = value
                .get("metadata")
                .and_then(|m| m.get(key))
                .and_then(Value::as_str);
            Ok(recorded == Some(owner.as_str()))
        }
        404 => Ok(false),
        status => Err(format!(
            "thread check: HTTP {status}: {}",
            http.redactor().body_detail(&answer.body)
        )),
    }
}
