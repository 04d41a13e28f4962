//! The unauthenticated routes under load (issue 22 LOW): `/readyz` reuses its database check
//! for a second, and the router serves at most `max_in_flight` requests at once, answering
//! one more with 503 at once. The database is a listener that accepts connections and never
//! answers, so every real check takes the pool's acquire timeout.

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use axum::Router;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tasklatch_core::engine::{SubmitCommand, SubmitError};
use tasklatch_core::ids::{IdSource, OwnerId, SeededIds, TaskId, ThreadId};
use tasklatch_core::store::{
    AnswerOutcome, AnswerRequest, CancelOutcome, CancelTarget, Scope, StoreError,
};
use tasklatch_core::task::TaskRow;
use tasklatch_worker::api::health::Health;
use tasklatch_worker::api::threads::{OwnerCheck, ThreadOwners};
use tasklatch_worker::api::{openapi, router, AppState, TaskService};
use tasklatch_worker::config::Auth;
use tasklatch_worker::metrics::Metrics;
use tower::ServiceExt;

/// How long one real database check takes here (the pool's acquire timeout).
const CHECK_TAKES: Duration = Duration::from_millis(600);

/// No task calls are made by these tests.
struct NoTasks;

impl TaskService for NoTasks {
    async fn submit(&self, _: &dyn IdSource, _: SubmitCommand) -> Result<TaskId, SubmitError> {
        Err(SubmitError::NotStarted("not in this test".into()))
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
        Ok(AnswerOutcome::NotFound)
    }
}

struct EveryThread;

impl ThreadOwners for EveryThread {
    fn usable<'a>(&'a self, _: &'a OwnerId, _: &'a ThreadId) -> OwnerCheck<'a> {
        Box::pin(async { Ok(true) })
    }
}

/// The router over a database that never answers, serving `max_in_flight` at once. The
/// listener is returned to keep it open.
async fn app(max_in_flight: usize) -> (Router, tokio::net::TcpListener) {
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let port = silent.local_addr().unwrap_or_else(|e| panic!("{e}")).port();
    let options = format!("postgres://u@127.0.0.1:{port}/db")
        .parse()
        .unwrap_or_else(|e| panic!("{e}"));
    let pool = sqlx::postgres::PgPoolOptions::new()
        .acquire_timeout(CHECK_TAKES)
        .connect_lazy_with(options);
    let state = AppState {
        tasks: Arc::new(NoTasks),
        ids: Arc::new(SeededIds::new(5)),
        auth: Arc::new(Auth::Tokens(BTreeMap::new())),
        servers: Arc::new(BTreeSet::new()),
        threads: Arc::new(EveryThread),
        metrics: Arc::new(Metrics::new()),
        health: Arc::new(Health::new(pool, Vec::new(), Duration::from_secs(60))),
        openapi: openapi::document([]).into(),
    };
    (router(state, 4 << 10, max_in_flight), silent)
}

/// `GET path`: the status and how long the answer took.
async fn get(app: &Router, path: &str) -> (StatusCode, Duration, Option<String>) {
    let req = Request::builder()
        .uri(path)
        .body(Body::empty())
        .unwrap_or_else(|e| panic!("{e}"));
    let start = Instant::now();
    let res = app
        .clone()
        .oneshot(req)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let retry = res
        .headers()
        .get(header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    (res.status(), start.elapsed(), retry)
}

#[tokio::test]
async fn readiness_reuses_its_database_check_for_a_second() {
    let (app, _silent) = app(64).await;
    let (status, first, _) = get(&app, "/readyz").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(first >= CHECK_TAKES / 2, "a real check: {first:?}");
    let (status, again, _) = get(&app, "/readyz").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(
        again < CHECK_TAKES / 2,
        "reused, not checked again: {again:?}"
    );
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    let (_, later, _) = get(&app, "/readyz").await;
    assert!(
        later >= CHECK_TAKES / 2,
        "checked again after a second: {later:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_beyond_the_in_flight_limit_are_shed_at_once() {
    let (app, _silent) = app(2).await;
    let slow: Vec<_> = (0..2)
        .map(|_| {
            let app = app.clone();
            tokio::spawn(async move { get(&app, "/readyz").await })
        })
        .collect();
    tokio::time::sleep(CHECK_TAKES / 4).await;
    let (status, took, retry) = get(&app, "/healthz").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "shed");
    assert!(took < CHECK_TAKES / 4, "at once: {took:?}");
    assert_eq!(retry.as_deref(), Some("1"));
    for s in slow {
        let (status, _, _) = s.await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "not ready");
    }
    assert_eq!(get(&app, "/healthz").await.0, StatusCode::OK);
}
