//! Shared by the in-process API tests (tower `oneshot` on the router): the stand-ins behind the
//! router (every thread usable, a launcher that starts nothing, a task service holding no
//! task), the builders of the engine and of the router's state, and the request helpers.
#![allow(dead_code)]

mod planted;
#[allow(unused_imports)]
pub use planted::*;

use axum::body::Body;
use axum::http::{header, HeaderMap, Method, Request, Response, StatusCode};
use axum::Router;
use http_body_util::BodyExt;
use sqlx::postgres::{PgPool, PgPoolOptions};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;
use tasklatch_core::engine::{Engine, SubmitCommand, SubmitError};
use tasklatch_core::ids::{IdSource, OwnerId, RunId, SeededIds, TaskId, ThreadId, WorkerId};
use tasklatch_core::mem_store::MemStore;
use tasklatch_core::policy::Policy;
use tasklatch_core::ports::{Driver, LaunchOutcome, Launcher, RunRequest, RunStatus};
use tasklatch_core::store::{
    AnswerOutcome, AnswerRequest, CancelOutcome, CancelTarget, Scope, StoreError,
};
use tasklatch_core::task::TaskRow;
use tasklatch_worker::api::health::Health;
use tasklatch_worker::api::threads::{OwnerCheck, ThreadOwners};
use tasklatch_worker::api::{openapi, AppState, TaskService};
use tasklatch_worker::clock::SystemClock;
use tasklatch_worker::config::Auth;
use tasklatch_worker::metrics::Metrics;
use tasklatch_worker::token::hash_token;
use tower::ServiceExt;

/// Every thread belongs to its caller: thread ownership has its own test
/// (`submit_guards.rs`, against a real agent server).
pub struct EveryThread;

impl ThreadOwners for EveryThread {
    fn usable<'a>(&'a self, _: &'a OwnerId, _: &'a ThreadId) -> OwnerCheck<'a> {
        Box::pin(async { Ok(true) })
    }
}

/// A launcher that starts no run: always busy, and every run it is asked about is pending.
pub struct IdleLauncher;

impl Launcher for IdleLauncher {
    async fn start_run(&self, _: RunRequest) -> LaunchOutcome {
        LaunchOutcome::Busy
    }
    async fn run_status(&self, _: &ThreadId, _: &RunId) -> Result<RunStatus, String> {
        Ok(RunStatus::Pending)
    }
}

/// The engine the API tests submit through, on the in-memory store with the system clock.
pub type MemEngine<D> = Engine<MemStore, D, IdleLauncher, SystemClock>;

/// A [`MemEngine`] over `driver` as worker `worker`, with the default policy.
pub fn mem_engine<D: Driver>(driver: D, worker: &str) -> MemEngine<D> {
    Engine::new(
        MemStore::new(Policy::default()),
        driver,
        IdleLauncher,
        SystemClock,
        WorkerId::from(worker),
        Policy::default(),
    )
}

/// A task service that holds no task: listings are empty, a task or a cancel's target is not
/// found; a submit fails with what `submit` makes and an answer gets what `answer` makes.
pub struct NoTasks {
    /// The error of every submit.
    pub submit: fn() -> SubmitError,
    /// The outcome of every answer.
    pub answer: fn() -> Result<AnswerOutcome, StoreError>,
}

impl TaskService for NoTasks {
    async fn submit(&self, _: &dyn IdSource, _: SubmitCommand) -> Result<TaskId, SubmitError> {
        Err((self.submit)())
    }
    async fn rows(&self, _: &Scope, _: usize) -> Result<Vec<TaskRow>, StoreError> {
        Ok(Vec::new())
    }
    async fn row(&self, _: &Scope, _: &TaskId) -> Result<Option<TaskRow>, StoreError> {
        Ok(None)
    }
    async fn cancel(&self, _: &Scope, _: &CancelTarget) -> Result<CancelOutcome, StoreError> {
        Ok(CancelOutcome::NotFound)
    }
    async fn answer(&self, _: &Scope, _: AnswerRequest) -> Result<AnswerOutcome, StoreError> {
        (self.answer)()
    }
}

/// Bearer-token authentication: each `(token, owner)` pair lets `token` act as `owner`.
pub fn bearer(pairs: &[(&str, &str)]) -> Auth {
    let tokens = pairs
        .iter()
        .map(|(token, owner)| (hash_token(token), OwnerId::from(*owner)))
        .collect::<BTreeMap<_, _>>();
    Auth::Tokens(tokens)
}

/// A pool on `url` that connects only when first used; `acquire_timeout` bounds how long a
/// connection is waited for (sqlx's default when `None`).
pub fn lazy_pool(url: &str, acquire_timeout: Option<Duration>) -> PgPool {
    let options = url.parse().unwrap_or_else(|e| panic!("{e}"));
    let pool = PgPoolOptions::new();
    let pool = match acquire_timeout {
        Some(timeout) => pool.acquire_timeout(timeout),
        None => pool,
    };
    pool.connect_lazy_with(options)
}

/// The router's state: `tasks` behind it, ids seeded with `seed`, `auth`, the configured
/// `servers` (also those of the OpenAPI document), `threads` for ownership, fresh metrics,
/// readiness over `pool` with no lane heartbeats, no backlog gauges refresher and no agent
/// tools and no panel.
pub fn app_state<T>(
    tasks: Arc<T>,
    seed: u64,
    auth: Auth,
    servers: &[&str],
    threads: Arc<dyn ThreadOwners>,
    pool: PgPool,
) -> AppState<T> {
    AppState {
        tasks,
        ids: Arc::new(SeededIds::new(seed)),
        auth: Arc::new(auth),
        servers: Arc::new(
            servers
                .iter()
                .map(|s| (*s).to_owned())
                .collect::<BTreeSet<_>>(),
        ),
        threads,
        metrics: Arc::new(Metrics::new()),
        health: Arc::new(Health::new(pool, Vec::new(), Duration::from_secs(60))),
        backlog: None,
        openapi: openapi::document(servers.iter().copied(), false).into(),
        agent_tools: None,
        ui: None,
    }
}

/// `method uri`, with `Authorization: Bearer {token}` when there is a token and a JSON `body`
/// when there is one (an empty body otherwise).
pub fn request(
    method: Method,
    uri: &str,
    token: Option<&str>,
    body: Option<&str>,
) -> Request<Body> {
    let mut req = Request::builder().method(method).uri(uri);
    if let Some(t) = token {
        req = req.header(header::AUTHORIZATION, format!("Bearer {t}"));
    }
    if body.is_some() {
        req = req.header(header::CONTENT_TYPE, "application/json");
    }
    req.body(Body::from(body.unwrap_or_default().to_owned()))
        .unwrap_or_else(|e| panic!("{e}"))
}

/// `req` through a clone of `app`: the response, its body not yet read.
pub async fn send(app: &Router, req: Request<Body>) -> Response<Body> {
    app.clone()
        .oneshot(req)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

/// [`request`] through [`send`], its body read whole: the status, the headers and the body as
/// text.
pub async fn call(
    app: &Router,
    method: Method,
    uri: &str,
    token: Option<&str>,
    body: Option<&str>,
) -> (StatusCode, HeaderMap, String) {
    let res = send(app, request(method, uri, token, body)).await;
    let (parts, body) = res.into_parts();
    let bytes = body
        .collect()
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .to_bytes();
    (
        parts.status,
        parts.headers,
        String::from_utf8_lossy(&bytes).into_owned(),
    )
}

/// `app` served on a loopback port of its own, in the background; the address.
pub async fn serve(app: Router) -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
    tokio::spawn(async move { axum::serve(listener, app).await });
    addr
}
