//! Peer health: whether the worker's peers — the Agent Server and each configured MCP server —
//! answered the last time they were contacted, and when they last answered and last failed.
//!
//! The engines' driver and launcher are wrapped ([`PeerDriver`], [`PeerLauncher`]), so every
//! call that reaches a peer is recorded in one shared [`PeerHealth`] without the engine knowing;
//! the Agent Server's assistant check ([`check_assistant`], [`watch_assistant`]) and the thread
//! ownership check at submit are recorded too. `/readyz` shows the registry in its body
//! (`peers`, see [`crate::api::health`]); its status code never depends on it: a peer that is
//! down is waited out by the lanes (launches and polls back off), not a reason to take the
//! worker out of service. The metrics are `tasklatch_peer_up{kind,peer}` and
//! `tasklatch_peer_last_success_timestamp_seconds{kind,peer}`.
//!
//! What counts as a contact: a call that got an answer it could use succeeded (a run started,
//! 409 busy, a thread gone, a status read; an MCP result or "unknown task"); a call that got
//! none failed (no connection, a timeout, 5xx, an answer that could not be read, a launch that
//! failed). A call the wrappers know made no request (an id the Agent Server cannot hold, an
//! MCP request refused before it was sent) is not recorded; an MCP `Rejected` is not recorded
//! either, since it may come from the driver's own checks before any request.
//!
//! Logs: one line per episode, not per call: a warning when a peer's contacts start failing
//! (after a success, or before any), an info line when it answers again.

use crate::api::threads::{OwnerCheck, ThreadOwners};
use crate::clock::SystemClock;
use crate::metrics::Metrics;
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tasklatch_agent_server::ids::is_uuid;
use tasklatch_agent_server::{AgentServerLauncher, CheckError};
use tasklatch_core::ids::{OwnerId, RunId, ServerId, ThreadId};
use tasklatch_core::ports::{
    Clock, Driver, DriverError, LaunchOutcome, Launcher, RunRequest, RunStatus, SubmitRequest,
    Submitted,
};
use tasklatch_core::secret::{RemoteHandle, Secret};
use tasklatch_core::snapshot::RemoteReport;
use tasklatch_core::time::Timestamp;
use tokio::sync::watch;
use utoipa::ToSchema;

/// The first wait before the assistant check is tried again after it could not be made.
pub const ASSISTANT_RETRY_FIRST: Duration = Duration::from_secs(1);
/// The longest wait between two assistant checks (the wait doubles up to it).
pub const ASSISTANT_RETRY_CAP: Duration = Duration::from_secs(30);

/// A peer of the worker.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Peer<'a> {
    /// The Agent Server that runs the notifications.
    AgentServer,
    /// The MCP server configured under this id.
    Mcp(&'a str),
}

impl<'a> Peer<'a> {
    /// `agent_server` or `mcp` (the metrics' `kind` label).
    pub fn kind(self) -> &'static str {
        match self {
            Peer::AgentServer => "agent_server",
            Peer::Mcp(_) => "mcp",
        }
    }

    /// `agent_server`, or the MCP server's configured id (the metrics' `peer` label).
    pub fn name(self) -> &'a str {
        match self {
            Peer::AgentServer => "agent_server",
            Peer::Mcp(id) => id,
        }
    }
}

/// What the Agent Server's assistant check found last.
#[derive(Copy, Clone, PartialEq, Eq, Debug, Default, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum AssistantState {
    /// No check has got an answer yet (the server could not be reached).
    #[default]
    Unchecked,
    /// The server has the configured assistant.
    Found,
    /// The server answered that the configured assistant (or graph) does not exist: a
    /// configuration error, logged as an error.
    Missing,
    /// The server refused the configured credentials: a configuration error.
    Unauthorized,
}

/// The last contacts with one peer.
#[derive(Copy, Clone, Default, Debug)]
struct Contacts {
    ok: Option<bool>,
    last_success: Option<Timestamp>,
    last_failure: Option<Timestamp>,
}

/// The shared registry of the peers' health. Cheap to read; every method ends at once.
pub struct PeerHealth {
    agent_server: Mutex<Contacts>,
    mcp: BTreeMap<String, Mutex<Contacts>>,
    assistant: Mutex<AssistantState>,
    metrics: Option<Arc<Metrics>>,
}

impl PeerHealth {
    /// A registry for the Agent Server and the MCP servers `mcp_ids` (the configured ids; a
    /// contact with any other id is ignored, so the registry stays bounded), nothing contacted
    /// yet. With `metrics`, every contact also sets the peer gauges.
    pub fn new<'a>(
        mcp_ids: impl IntoIterator<Item = &'a str>,
        metrics: Option<Arc<Metrics>>,
    ) -> Self {
        let mcp_ids: Vec<&str> = mcp_ids.into_iter().collect();
        if let Some(m) = &metrics {
            mcp_ids.iter().for_each(|id| m.mcp_server(id));
        }
        PeerHealth {
            agent_server: Mutex::default(),
            mcp: mcp_ids
                .into_iter()
                .map(|id| (id.to_owned(), Mutex::default()))
                .collect(),
            assistant: Mutex::default(),
            metrics,
        }
    }

    /// Counts a failed call to the MCP server `server` in the metrics, by server; an id that
    /// is not configured is ignored (the series stay bounded).
    pub fn mcp_failed(&self, server: &ServerId, failure: McpFailure) {
        let Some(m) = self
            .metrics
            .as_ref()
            .filter(|_| self.mcp.contains_key(server.as_str()))
        else {
            return;
        };
        match failure {
            McpFailure::Poll => m.poll_failed(server.as_str()),
            McpFailure::CancelRefused => m.cancel_failed(server.as_str()),
            McpFailure::CancelUnanswered => m.cancel_unanswered(server.as_str()),
        }
    }

    /// Records a contact with `peer` at `now`: `ok` if it got a usable answer. Logs the first
    /// failure after a success (or before any) and the first success after a failure.
    pub fn record(&self, peer: Peer<'_>, ok: bool, now: Timestamp) {
        let Some(cell) = self.cell(peer) else {
            return;
        };
        let before = {
            let mut c = lock(cell);
            let before = c.ok;
            c.ok = Some(ok);
            if ok {
                c.last_success = Some(now);
            } else {
                c.last_failure = Some(now);
            }
            before
        };
        let name = peer.name();
        if let Some(m) = &self.metrics {
            m.peer_contact(peer.kind(), name, ok, now.as_micros() as f64 / 1e6);
        }
        match (before, ok) {
            (Some(true) | None, false) => tracing::warn!(
                kind = peer.kind(),
                peer = name,
                "peer unreachable: calls to it fail and back off until it answers"
            ),
            (Some(false), true) => {
                tracing::info!(kind = peer.kind(), peer = name, "peer answers again")
            }
            _ => {}
        }
    }

    /// Records what the assistant check found (the contact itself is recorded apart).
    pub fn set_assistant(&self, state: AssistantState) {
        *lock(&self.assistant) = state;
    }

    /// What the assistant check found last.
    pub fn assistant(&self) -> AssistantState {
        *lock(&self.assistant)
    }

    /// Whether the last contact with `peer` succeeded (`None`: never contacted, or not a
    /// configured peer).
    pub fn reachable(&self, peer: Peer<'_>) -> Option<bool> {
        self.cell(peer).and_then(|c| lock(c).ok)
    }

    /// The registry as `/readyz` shows it.
    pub fn report(&self) -> PeersReport {
        let a = *lock(&self.agent_server);
        PeersReport {
            agent_server: AgentServerReport {
                reachable: a.ok,
                last_success: a.last_success.map(crate::api::shapes::rfc3339),
                last_failure: a.last_failure.map(crate::api::shapes::rfc3339),
                assistant: self.assistant(),
            },
            mcp_servers: self
                .mcp
                .iter()
                .map(|(id, cell)| (id.clone(), PeerReport::of(*lock(cell))))
                .collect(),
        }
    }

    fn cell(&self, peer: Peer<'_>) -> Option<&Mutex<Contacts>> {
        match peer {
            Peer::AgentServer => Some(&self.agent_server),
            Peer::Mcp(id) => self.mcp.get(id),
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// One MCP server's health in `/readyz`'s `peers`.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, ToSchema)]
pub struct PeerReport {
    /// Whether the last contact got a usable answer; `null` before the first contact.
    pub reachable: Option<bool>,
    /// When a contact last succeeded (RFC 3339, UTC); `null` if none did.
    pub last_success: Option<String>,
    /// When a contact last failed (RFC 3339, UTC); `null` if none did.
    pub last_failure: Option<String>,
}

impl PeerReport {
    fn of(c: Contacts) -> Self {
        PeerReport {
            reachable: c.ok,
            last_success: c.last_success.map(crate::api::shapes::rfc3339),
            last_failure: c.last_failure.map(crate::api::shapes::rfc3339),
        }
    }
}

/// The Agent Server's health in `/readyz`'s `peers`.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, ToSchema)]
pub struct AgentServerReport {
    /// Whether the last contact got a usable answer; `null` before the first contact.
    pub reachable: Option<bool>,
    /// When a contact last succeeded (RFC 3339, UTC); `null` if none did.
    pub last_success: Option<String>,
    /// When a contact last failed (RFC 3339, UTC); `null` if none did.
    pub last_failure: Option<String>,
    /// What the assistant check found last.
    pub assistant: AssistantState,
}

/// The peers' health: the Agent Server, and each configured MCP server by its id.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, ToSchema)]
pub struct PeersReport {
    /// The Agent Server.
    pub agent_server: AgentServerReport,
    /// The MCP servers, by configured id.
    pub mcp_servers: BTreeMap<String, PeerReport>,
}

/// A failed MCP call, as the metrics count it.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum McpFailure {
    /// A poll the server left unanswered, answered malformed, or refused.
    Poll,
    /// A remote cancel the server refused: a counted failure of the cancel work.
    CancelRefused,
    /// A remote cancel the server left unanswered: waited out, not counted.
    CancelUnanswered,
}

/// The engines' MCP driver, recording in [`PeerHealth`] every call's contact with its server,
/// and counting failed polls and cancels by server.
#[derive(Clone)]
pub struct PeerDriver<D> {
    inner: D,
    peers: Arc<PeerHealth>,
}

impl<D> PeerDriver<D> {
    /// Wraps `inner`, recording into `peers`.
    pub fn new(inner: D, peers: Arc<PeerHealth>) -> Self {
        PeerDriver { inner, peers }
    }

    fn note<T>(&self, server: &ServerId, result: &Result<T, DriverError>) {
        let ok = match result {
            Ok(_) | Err(DriverError::UnknownTask) => true,
            Err(DriverError::Unavailable { .. } | DriverError::Malformed(_)) => false,
            Err(_) => return,
        };
        self.peers
            .record(Peer::Mcp(server.as_str()), ok, SystemClock.now());
    }
}

impl<D: Driver> Driver for PeerDriver<D> {
    async fn submit(&self, req: &SubmitRequest) -> Result<Submitted, DriverError> {
        let r = self.inner.submit(req).await;
        self.note(&req.server, &r);
        r
    }

    async fn get_status(
        &self,
        server: &ServerId,
        handle: &RemoteHandle,
    ) -> Result<RemoteReport, DriverError> {
        let r = self.inner.get_status(server, handle).await;
        self.note(server, &r);
        if matches!(
            r,
            Err(DriverError::Unavailable { .. }
                | DriverError::Malformed(_)
                | DriverError::Rejected(_))
        ) {
            self.peers.mcp_failed(server, McpFailure::Poll);
        }
        r
    }

    async fn cancel(
        &self,
        server: &ServerId,
        handle: &RemoteHandle,
    ) -> Result<RemoteReport, DriverError> {
        let r = self.inner.cancel(server, handle).await;
        self.note(server, &r);
        match &r {
            Err(DriverError::Rejected(_)) => {
                self.peers.mcp_failed(server, McpFailure::CancelRefused)
            }
            Err(DriverError::Unavailable { .. }) => {
                self.peers.mcp_failed(server, McpFailure::CancelUnanswered)
            }
            _ => {}
        }
        r
    }

    async fn answer(
        &self,
        server: &ServerId,
        handle: &RemoteHandle,
        request_id: &str,
        answer: &Secret,
    ) -> Result<(), DriverError> {
        let r = self.inner.answer(server, handle, request_id, answer).await;
        self.note(server, &r);
        r
    }
}

/// The Agent Server launcher, recording in [`PeerHealth`] every call that made a request.
/// Also the API's thread-ownership check ([`ThreadOwners`]).
pub struct PeerLauncher {
    inner: AgentServerLauncher,
    peers: Arc<PeerHealth>,
}

impl PeerLauncher {
    /// Wraps `inner`, recording into `peers`.
    pub fn new(inner: AgentServerLauncher, peers: Arc<PeerHealth>) -> Self {
        PeerLauncher { inner, peers }
    }

    fn note(&self, ok: bool) {
        self.peers.record(Peer::AgentServer, ok, SystemClock.now());
    }
}

impl Launcher for PeerLauncher {
    async fn start_run(&self, req: RunRequest) -> LaunchOutcome {
        let asks = is_uuid(req.thread.as_str());
        let outcome = self.inner.start_run(req).await;
        if asks {
            let ok = matches!(
                outcome,
                LaunchOutcome::Started(_) | LaunchOutcome::Busy | LaunchOutcome::ThreadGone
            );
            self.note(ok);
        }
        outcome
    }

    async fn run_status(&self, thread: &ThreadId, run: &RunId) -> Result<RunStatus, String> {
        let r = self.inner.run_status(thread, run).await;
        if is_uuid(thread.as_str()) && is_uuid(run.as_str()) {
            self.note(r.is_ok());
        }
        r
    }

    async fn interrupt_run(&self, thread: &ThreadId, run: &RunId) -> Result<(), String> {
        let r = self.inner.interrupt_run(thread, run).await;
        if is_uuid(thread.as_str()) && is_uuid(run.as_str()) {
            self.note(r.is_ok());
        }
        r
    }
}

impl ThreadOwners for PeerLauncher {
    fn usable<'a>(&'a self, owner: &'a OwnerId, thread: &'a ThreadId) -> OwnerCheck<'a> {
        Box::pin(async move {
            let r = self.inner.thread_usable(owner, thread).await;
            let asked =
                is_uuid(thread.as_str()) && self.inner.config().owner_metadata_key.is_some();
            if asked {
                self.note(r.is_ok());
            }
            r
        })
    }
}

/// Asks the Agent Server whether the configured assistant exists
/// ([`AgentServerLauncher::check`], within its `request_timeout`) and records the contact and
/// what it found. A definite answer ([`CheckError::is_definite`]: the assistant is missing, the
/// credentials are refused) is a contact that succeeded.
pub async fn check_assistant(
    launcher: &AgentServerLauncher,
    peers: &PeerHealth,
) -> Result<(), CheckError> {
    let result = launcher.check().await;
    let now = SystemClock.now();
    match &result {
        Ok(()) => peers.set_assistant(AssistantState::Found),
        Err(CheckError::AssistantMissing(_)) => peers.set_assistant(AssistantState::Missing),
        Err(CheckError::Unauthorized(_)) => peers.set_assistant(AssistantState::Unauthorized),
        Err(CheckError::Unavailable(_)) => {}
    }
    let contacted = result
        .as_ref()
        .map_or_else(CheckError::is_definite, |()| true);
    peers.record(Peer::AgentServer, contacted, now);
    result
}

/// Checks the assistant again in the background until the check passes or `stop` turns true:
/// first after [`ASSISTANT_RETRY_FIRST`], the wait doubling up to [`ASSISTANT_RETRY_CAP`].
/// `first` is the failure the start-up check met (already logged). Logs once per episode: a
/// warning when the server cannot be asked, an error when it answers that the assistant is
/// missing or the credentials are refused (the worker keeps running; launches fail until the
/// configuration or the server is fixed), an info line when the check passes.
pub async fn watch_assistant(
    launcher: AgentServerLauncher,
    peers: Arc<PeerHealth>,
    first: CheckError,
    mut stop: watch::Receiver<bool>,
) {
    let mut last = first;
    let mut wait = ASSISTANT_RETRY_FIRST;
    loop {
        let checked = tokio::select! {
            _ = stop.wait_for(|s| *s) => return,
            r = async {
                tokio::time::sleep(wait).await;
                check_assistant(&launcher, &peers).await
            } => r,
        };
        let e = match checked {
            Ok(()) => {
                tracing::info!(
                    "assistant check passed: the agent server answers and has the assistant"
                );
                return;
            }
            Err(e) => e,
        };
        if std::mem::discriminant(&e) != std::mem::discriminant(&last) {
            log_check_failure(&e, "retrying in the background");
        }
        last = e;
        wait = (wait * 2).min(ASSISTANT_RETRY_CAP);
    }
}

/// One log line for a failed assistant check: an error for a definite answer (a configuration
/// to fix), a warning otherwise. `then` says what happens next.
pub fn log_check_failure(e: &CheckError, then: &str) {
    if e.is_definite() {
        tracing::error!(error = %e, "assistant check failed: fix agent_server.assistant_id or the credentials; {then}");
    } else {
        tracing::warn!(error = %e, "assistant check: the agent server cannot be asked; launches back off; {then}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_contact_decides_and_both_times_are_kept() {
        let metrics = Arc::new(Metrics::new());
        let p = PeerHealth::new(["research"], Some(metrics.clone()));
        assert_eq!(p.reachable(Peer::AgentServer), None);
        p.record(Peer::AgentServer, false, Timestamp::from_micros(1_000_000));
        p.record(
            Peer::Mcp("research"),
            true,
            Timestamp::from_micros(2_000_000),
        );
        p.record(Peer::Mcp("other"), true, Timestamp::from_micros(2_000_000));
        let r = p.report();
        assert_eq!(r.agent_server.reachable, Some(false));
        assert_eq!(
            r.agent_server.last_failure.as_deref(),
            Some("1970-01-01T00:00:01.000000Z")
        );
        assert_eq!(r.agent_server.last_success, None);
        assert_eq!(r.agent_server.assistant, AssistantState::Unchecked);
        assert_eq!(r.mcp_servers.len(), 1, "only configured ids are kept");
        assert_eq!(r.mcp_servers["research"].reachable, Some(true));
        p.record(Peer::AgentServer, true, Timestamp::from_micros(3_000_000));
        assert_eq!(p.reachable(Peer::AgentServer), Some(true));
        let text = metrics.render();
        for line in [
            "tasklatch_peer_up{kind=\"agent_server\",peer=\"agent_server\"} 1",
            "tasklatch_peer_up{kind=\"mcp\",peer=\"research\"} 1",
            "tasklatch_peer_last_success_timestamp_seconds{kind=\"agent_server\",peer=\"agent_server\"} 3.0",
        ] {
            assert!(text.contains(line), "missing {line:?} in\n{text}");
        }
        assert!(!text.contains("peer=\"other\""));
    }
}
