//! The HTTP API for agents and UIs (axum), with its OpenAPI document at `/openapi.json`.
//!
//! | method | path | what |
//! |---|---|---|
//! | POST | `/v1/threads/{thread}/tasks` | submit (server, tool, arguments, name) → 201 |
//! | GET | `/v1/threads/{thread}/tasks?limit=N` | the caller's tasks in the thread, newest first (default 20, at most 100) |
//! | GET | `/v1/threads/{thread}/tasks/{task}` | detail (whitelisted) |
//! | POST | `/v1/threads/{thread}/tasks/{task}/cancel` | cancel by id |
//! | POST | `/v1/threads/{thread}/cancel` | cancel by name (`{"name": …}`) |
//! | GET | `/openapi.json`, `/metrics`, `/healthz`, `/readyz` | no authentication |
//! | POST | `/mcp` | the agent tools over MCP, when switched on ([`crate::agent_tools`]) |
//! | GET, POST | `/ui/…` | the background-task panel, when switched on ([`crate::ui`]) |
//!
//! `/ui` is not in `/openapi.json`: it is a browser surface behind a session cookie, not an API.
//!
//! At most `http.max_in_flight` requests are served at once; one more is 503 at once.
//!
//! Every task call is scoped to (owner, thread): the owner comes from authentication
//! ([`auth`]), the thread from the path; a task outside that scope is 404 "not found", exactly
//! like a task that does not exist. A submit is accepted only into a thread the agent server
//! records as the caller's ([`threads`]); any other thread is the same 404. Bodies are bounded (`http.max_body_bytes`); malformed input
//! is 400/413/415/422 with a JSON message; a store failure is 503 — never a 500.

pub(crate) mod answers;
pub mod auth;
pub(crate) mod error;
pub mod health;
pub mod openapi;
pub mod shapes;
mod shed;
pub(crate) mod tasks;
pub mod threads;

pub use error::{ApiError, ErrorBody};

use crate::agent_tools;
use crate::backlog::BacklogGauges;
use crate::config::{AgentTools, Auth};
use crate::metrics::Metrics;
use crate::ui::{self, Panel};
use axum::extract::DefaultBodyLimit;
use axum::http::StatusCode;
use axum::middleware;
use axum::routing::{get, post};
use axum::Router;
use health::Health;
use std::collections::BTreeSet;
use std::future::Future;
use std::sync::Arc;
use tasklatch_core::engine::{Engine, SubmitCommand, SubmitError};
use tasklatch_core::ids::{IdSource, TaskId};
use tasklatch_core::ports::{Clock, Driver, Launcher};
use tasklatch_core::store::{
    AnswerOutcome, AnswerRequest, CancelOutcome, CancelTarget, ListOrder, Scope, Store, StoreError,
};
use tasklatch_core::task::TaskRow;
use tokio::sync::Semaphore;

/// What the API needs from the engine: submit (with its compensation) and the scoped calls.
pub trait TaskService: Send + Sync + 'static {
    /// Starts and persists a task (`Engine::submit`).
    fn submit(
        &self,
        ids: &dyn IdSource,
        cmd: SubmitCommand,
    ) -> impl Future<Output = Result<TaskId, SubmitError>> + Send;
    /// The caller's tasks in the thread, newest first, at most `limit` (the store reads no
    /// more).
    fn rows(
        &self,
        scope: &Scope,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<TaskRow>, StoreError>> + Send;
    /// One of the caller's tasks.
    fn row(
        &self,
        scope: &Scope,
        id: &TaskId,
    ) -> impl Future<Output = Result<Option<TaskRow>, StoreError>> + Send;
    /// Records a cancel request.
    fn cancel(
        &self,
        scope: &Scope,
        target: &CancelTarget,
    ) -> impl Future<Output = Result<CancelOutcome, StoreError>> + Send;
    /// Records the user's answer to a question of an `input_required` task.
    fn answer(
        &self,
        scope: &Scope,
        answer: AnswerRequest,
    ) -> impl Future<Output = Result<AnswerOutcome, StoreError>> + Send;
}

impl<S, D, L, C> TaskService for Engine<S, D, L, C>
where
    S: Store + 'static,
    D: Driver + 'static,
    L: Launcher + 'static,
    C: Clock + 'static,
{
    fn submit(
        &self,
        ids: &dyn IdSource,
        cmd: SubmitCommand,
    ) -> impl Future<Output = Result<TaskId, SubmitError>> + Send {
        Engine::submit(self, ids, cmd)
    }

    fn rows(
        &self,
        scope: &Scope,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<TaskRow>, StoreError>> + Send {
        self.store().list_tasks(scope, ListOrder::Newest, limit)
    }

    fn row(
        &self,
        scope: &Scope,
        id: &TaskId,
    ) -> impl Future<Output = Result<Option<TaskRow>, StoreError>> + Send {
        self.store().get_task(scope, id)
    }

    async fn cancel(
        &self,
        scope: &Scope,
        target: &CancelTarget,
    ) -> Result<CancelOutcome, StoreError> {
        Engine::cancel(self, scope, target)
            .await
            .map_err(|e| match e {
                tasklatch_core::engine::ApiError::Store(e) => e,
                tasklatch_core::engine::ApiError::NotFound => {
                    StoreError::Invalid("cancel answered not-found as an error".into())
                }
            })
    }

    async fn answer(
        &self,
        scope: &Scope,
        answer: AnswerRequest,
    ) -> Result<AnswerOutcome, StoreError> {
        Engine::answer(self, scope, answer)
            .await
            .map_err(|e| match e {
                tasklatch_core::engine::ApiError::Store(e) => e,
                tasklatch_core::engine::ApiError::NotFound => {
                    StoreError::Invalid("answer answered not-found as an error".into())
                }
            })
    }
}

/// What every handler can reach.
pub struct AppState<T> {
    /// The engine that serves submits (lane 0's: its passes retry failed compensations).
    pub tasks: Arc<T>,
    /// Fresh task ids.
    pub ids: Arc<dyn IdSource>,
    /// How callers are authenticated.
    pub auth: Arc<Auth>,
    /// The configured MCP server ids (a submit naming another is refused before any call).
    pub servers: Arc<BTreeSet<String>>,
    /// Thread ownership, asked before a submit starts anything ([`threads`]).
    pub threads: Arc<dyn threads::ThreadOwners>,
    /// The worker's metrics.
    pub metrics: Arc<Metrics>,
    /// Liveness and readiness.
    pub health: Arc<Health>,
    /// The backlog gauges, refreshed when `/metrics` is scraped; `None`: they stay at 0 (a
    /// state with no database to read them from).
    pub backlog: Option<Arc<BacklogGauges>>,
    /// The OpenAPI document, rendered once.
    pub openapi: Arc<str>,
    /// The agent tools served at `/mcp`; `None`: no `/mcp`.
    pub agent_tools: Option<Arc<AgentTools>>,
    /// The background-task panel served at `/ui`; `None`: no `/ui`.
    pub ui: Option<Arc<Panel>>,
}

impl<T> Clone for AppState<T> {
    fn clone(&self) -> Self {
        AppState {
            tasks: self.tasks.clone(),
            ids: self.ids.clone(),
            auth: self.auth.clone(),
            servers: self.servers.clone(),
            threads: self.threads.clone(),
            metrics: self.metrics.clone(),
            health: self.health.clone(),
            backlog: self.backlog.clone(),
            openapi: self.openapi.clone(),
            agent_tools: self.agent_tools.clone(),
            ui: self.ui.clone(),
        }
    }
}

/// The whole API (with `/mcp` when `state.agent_tools` is set, `/ui` when `state.ui` is), with
/// request bodies limited to `max_body_bytes` and at most `max_in_flight` requests served at
/// once (more are answered 503 at once: module `shed`).
pub fn router<T: TaskService>(
    state: AppState<T>,
    max_body_bytes: usize,
    max_in_flight: usize,
) -> Router {
    let in_flight = Arc::new(Semaphore::new(max_in_flight));
    let tools = match state.agent_tools.clone() {
        Some(config) => agent_tools::route(&state, config, max_body_bytes),
        None => Router::new(),
    };
    let panel = match state.ui.clone() {
        Some(panel) => ui::route(panel),
        None => Router::new(),
    };
    Router::new()
        .route(
            "/v1/threads/{thread}/tasks",
            post(tasks::submit::<T>).get(tasks::list::<T>),
        )
        .route("/v1/threads/{thread}/tasks/{task}", get(tasks::detail::<T>))
        .route(
            "/v1/threads/{thread}/tasks/{task}/cancel",
            post(tasks::cancel_by_id::<T>),
        )
        .route(
            "/v1/threads/{thread}/tasks/{task}/answer",
            post(answers::answer::<T>),
        )
        .route(
            "/v1/threads/{thread}/cancel",
            post(tasks::cancel_by_name::<T>),
        )
        .route("/openapi.json", get(health::openapi::<T>))
        .route("/metrics", get(health::metrics::<T>))
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz::<T>))
        .merge(tools)
        .merge(panel)
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(max_body_bytes))
        .with_state(state)
        .layer(middleware::from_fn_with_state(in_flight, shed::shed))
}

async fn not_found() -> ApiError {
    ApiError::not_found()
}

async fn method_not_allowed() -> ApiError {
    ApiError::new(StatusCode::METHOD_NOT_ALLOWED, "method not allowed")
}
