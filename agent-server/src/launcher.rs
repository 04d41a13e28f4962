//! [`AgentServerLauncher`]: the engine's [`Launcher`] port over the LangGraph Agent Server runs
//! API (`langgraph dev`, LangGraph Platform, and gateways that follow its API).
//!
//! `start_run`: owner check ([`AgentServerLauncher::thread_usable`]) → key lookup among the
//! thread's runs (first look) → create → second look ("two looks, oldest wins", module `settle`).
//!
//! | what happens | outcome |
//! |---|---|
//! | thread id is not a canonical UUID (the server cannot hold it; it would answer 422) | `ThreadGone`, no request made |
//! | the thread is missing, or its metadata does not name the request's owner under `owner_metadata_key` (unless `check_thread_owner = false`) | `ThreadGone`, nothing created |
//! | the owner check gets no usable answer | `Failed` (retried), nothing created |
//! | runs of the thread hold the key in their metadata | `Started(the oldest)`, the others rolled back, nothing created |
//! | after a create, the second look finds an older run holding the key | `Started(the oldest)`, the new run rolled back |
//! | after a create, the second look fails | `Failed`, the new run rolled back |
//! | run list or create answers 404 (assistant re-checked and present) | `ThreadGone` |
//! | create answers 404 and the assistant is missing or cannot be checked | `Failed` |
//! | create answers 409 | `Busy` (nothing queued: `multitask_strategy` is always `reject`) |
//! | create answers 2xx with a run id (UUID) for this thread | `Started(run)` |
//! | 2xx without a valid run id, any other status (422, 5xx, 3xx…), a timeout, an answer over the byte limit, a broken exchange | `Failed` (bounded, secret-free; the run may exist, and a retry with the same key finds it) |
//!
//! The lookup and the create end within `request_timeout`, and the create is not sent once that
//! deadline has passed, so a worker that stalled after its lookup does not create a run late;
//! the second look and its rollbacks get one more `request_timeout`. The whole call ends within
//! `2 × request_timeout`, which [`ValidConfig::fits`] keeps below the engine's `min_lease_left`
//! (README "What window remains").
//!
//! `run_status`: `GET /threads/{thread}/runs/{run}` → the status; 404 (run or thread gone) or an
//! id the server cannot hold → `Missing`; anything else → `Err`.

use crate::check::{assistant_exists, thread_owned_by, CheckError};
use crate::config::{AgentServerConfig, ConfigError, ValidConfig};
use crate::http::Http;
use crate::ids::is_uuid;
use crate::lookup::{find_run, Lookup};
use crate::settle::{second_look, settle};
use crate::text::failure;
use crate::wire::{parse_run, run_body};
use std::sync::Arc;
use std::time::Instant;
use tasklatch_core::ids::{OwnerId, RunId, ThreadId};
use tasklatch_core::ports::{LaunchOutcome, Launcher, RunRequest, RunStatus};

/// Starts notification runs on an Agent Server. Cheap to share behind an `Arc`; one connection
/// pool for all calls.
pub struct AgentServerLauncher {
    cfg: ValidConfig,
    http: Http,
}

impl AgentServerLauncher {
    /// A launcher for `config` (validated here). Makes no request: call [`Self::check`] before
    /// the first launch.
    pub fn new(config: &AgentServerConfig) -> Result<Self, ConfigError> {
        let cfg = config.validate()?;
        let http = Http::new(&cfg)?;
        Ok(AgentServerLauncher { cfg, http })
    }

    /// As [`Self::new`], with every request sent through `connector` instead of TCP + rustls
    /// (the simulation's network, for one).
    pub fn with_connector(
        config: &AgentServerConfig,
        connector: Arc<dyn tasklatch_http::Connector>,
    ) -> Result<Self, ConfigError> {
        let cfg = config.validate()?;
        let http = Http::with_connector(&cfg, connector)?;
        Ok(AgentServerLauncher { cfg, http })
    }

    /// The configuration in force.
    pub fn config(&self) -> &ValidConfig {
        &self.cfg
    }

    /// The start-up check the worker makes once before launching anything: the server answers,
    /// accepts our credentials, and has the configured assistant. Without it a missing
    /// assistant would look like a missing thread (the server answers the same 404).
    pub async fn check(&self) -> Result<(), CheckError> {
        assistant_exists(&self.http, &self.cfg).await
    }

    /// Whether a task of `owner` may be bound to `thread`, and a run started on it: the id is
    /// a UUID (the only ids the server holds) and — unless `check_thread_owner = false` — the
    /// thread exists and its metadata names `owner` under `owner_metadata_key`.
    /// `Ok(false)` for a foreign, missing or non-UUID thread alike (the caller must not tell
    /// them apart); `Err` (bounded, secret-free) when the server gave no usable answer. At most
    /// one request, within `request_timeout`.
    pub async fn thread_usable(&self, owner: &OwnerId, thread: &ThreadId) -> Result<bool, String> {
        if !is_uuid(thread.as_str()) {
            return Ok(false);
        }
        match &self.cfg.owner_metadata_key {
            Some(key) => thread_owned_by(&self.http, key, thread, owner)
                .await
                .map_err(failure),
            None => Ok(true),
        }
    }

    async fn launch(&self, req: &RunRequest, start: Instant) -> LaunchOutcome {
        let deadline = start + self.cfg.request_timeout;
        match self.thread_usable(&req.owner, &req.thread).await {
            Ok(true) => {}
            Ok(false) => return LaunchOutcome::ThreadGone,
            Err(e) => return LaunchOutcome::Unavailable(e),
        }
        match find_run(&self.http, &self.cfg, &req.thread, &req.key).await {
            Ok(Lookup::Found(seen)) => {
                if let Some(outcome) = settle(&self.http, &req.thread, None, &seen, deadline).await
                {
                    return outcome;
                }
            }
            Ok(Lookup::ThreadGone) => return LaunchOutcome::ThreadGone,
            Ok(Lookup::Absent { window_exhausted }) if window_exhausted => tracing::warn!(
                thread = %req.thread,
                key = %req.key,
                "run lookup read its page limit without reaching the thread's first run"
            ),
            Ok(Lookup::Absent { .. }) => {}
            Err(e) => return LaunchOutcome::Unavailable(e),
        }
        if Instant::now() >= deadline {
            return LaunchOutcome::Unavailable(failure(
                "the call's deadline passed before the create; nothing was created",
            ));
        }
        match self.create(req).await {
            LaunchOutcome::Started(mine) => {
                let end = start + 2 * self.cfg.request_timeout;
                second_look(&self.http, &self.cfg, &req.thread, &req.key, mine, end).await
            }
            other => other,
        }
    }

    async fn create(&self, req: &RunRequest) -> LaunchOutcome {
        let path = format!("/threads/{}/runs", req.thread);
        let answer = match self
            .http
            .post(&path, &run_body(&self.cfg.assistant_id, req))
            .await
        {
            Ok(answer) => answer,
            Err(e) => {
                return LaunchOutcome::Unavailable(failure(format_args!(
                    "create: {e}; the run may or may not exist"
                )))
            }
        };
        match answer.status {
            200..=299 => created(&req.thread, &answer.body),
            409 => LaunchOutcome::Busy,
            404 => self.not_found().await,
            status if unanswered_status(status) => {
                LaunchOutcome::Unavailable(failure(format_args!(
                    "create: HTTP {status}: {}; the run may or may not exist",
                    self.http.redactor().body_detail(&answer.body)
                )))
            }
            status => LaunchOutcome::Failed(failure(format_args!(
                "create: HTTP {status}: {}",
                self.http.redactor().body_detail(&answer.body)
            ))),
        }
    }

    /// A 404 on create: the thread is gone — unless the assistant is.
    async fn not_found(&self) -> LaunchOutcome {
        match self.check().await {
            Ok(()) => LaunchOutcome::ThreadGone,
            Err(e @ CheckError::Unavailable(_)) => LaunchOutcome::Unavailable(failure(
                format_args!("create answered 404 and the assistant check says: {e}"),
            )),
            Err(e) => LaunchOutcome::Failed(failure(format_args!(
                "create answered 404 and the assistant check says: {e}"
            ))),
        }
    }
}

/// Whether a create's HTTP status says the server could not take the request now (a timeout
/// at a proxy, rate limiting, a 5xx): waited out, never counted against the failure budget
/// (DOMAIN §3). Any other refusal is the request's own.
fn unanswered_status(status: u16) -> bool {
    matches!(status, 408 | 429 | 500..=599)
}

/// A 2xx answer to a create: the run, if it is a valid run of this thread.
fn created(thread: &ThreadId, body: &[u8]) -> LaunchOutcome {
    match parse_run(body) {
        Ok(run)
            if run
                .thread_id
                .as_deref()
                .is_some_and(|t| !t.eq_ignore_ascii_case(thread.as_str())) =>
        {
            LaunchOutcome::Failed(failure("create: the answer names another thread"))
        }
        Ok(run) => LaunchOutcome::Started(run.run_id),
        Err(why) => LaunchOutcome::Failed(failure(format_args!(
            "create: {why}; the run may exist, a retry with the same key finds it"
        ))),
    }
}

impl Launcher for AgentServerLauncher {
    async fn start_run(&self, req: RunRequest) -> LaunchOutcome {
        if !is_uuid(req.thread.as_str()) {
            return LaunchOutcome::ThreadGone;
        }
        let budget = 2 * self.cfg.request_timeout;
        let outcome = match tokio::time::timeout(budget, self.launch(&req, Instant::now())).await {
            Ok(outcome) => outcome,
            Err(_) => LaunchOutcome::Unavailable(failure(format_args!(
                "no outcome within {} ms; the run may or may not exist",
                budget.as_millis()
            ))),
        };
        tracing::debug!(thread = %req.thread, key = %req.key, ?outcome, "agent server launch");
        outcome
    }

    async fn run_status(&self, thread: &ThreadId, run: &RunId) -> Result<RunStatus, String> {
        if !is_uuid(thread.as_str()) || !is_uuid(run.as_str()) {
            return Ok(RunStatus::Missing);
        }
        let answer = self
            .http
            .get(&format!("/threads/{thread}/runs/{run}"))
            .await
            .map_err(|e| failure(format_args!("run status: {e}")))?;
        match answer.status {
            200 => {
                let found = parse_run(&answer.body)
                    .map_err(|why| failure(format_args!("run status: {why}")))?;
                if !found.run_id.as_str().eq_ignore_ascii_case(run.as_str()) {
                    return Err(failure("run status: the answer names another run"));
                }
                found
                    .status
                    .ok_or_else(|| failure("run status: the answer has no known status"))
            }
            404 => Ok(RunStatus::Missing),
            status => Err(failure(format_args!(
                "run status: HTTP {status}: {}",
                self.http.redactor().body_detail(&answer.body)
            ))),
        }
    }

    /// `POST /threads/{thread}/runs/{run}/cancel?wait=true&action=interrupt`: the server stops
    /// the run and marks it `interrupted`. 404 (the run or its thread is gone) is over too.
    async fn interrupt_run(&self, thread: &ThreadId, run: &RunId) -> Result<(), String> {
        if !is_uuid(thread.as_str()) || !is_uuid(run.as_str()) {
            return Ok(());
        }
        let path = format!("/threads/{thread}/runs/{run}/cancel?wait=true&action=interrupt");
        let answer = self
            .http
            .post(&path, &serde_json::json!({}))
            .await
            .map_err(|e| failure(format_args!("interrupt: {e}")))?;
        match answer.status {
            200..=299 | 404 => {
                tracing::info!(%thread, %run, "interrupted a run that outlived max_run_life");
                Ok(())
            }
            status => Err(failure(format_args!(
                "interrupt: HTTP {status}: {}",
                self.http.redactor().body_detail(&answer.body)
            ))),
        }
    }
}
