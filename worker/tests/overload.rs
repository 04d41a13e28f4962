//! The unauthenticated routes under load (issue 22 LOW): `/readyz` reuses its database check
//! for a second, and the router serves at most `max_in_flight` requests at once, answering
//! one more with 503 at once. The database is a listener that accepts connections and never
//! answers, so every real check takes the pool's acquire timeout.

mod support;

use axum::http::{header, Method, StatusCode};
use axum::Router;
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::{app_state, bearer, lazy_pool, request, send, EveryThread, NoTasks};
use tasklatch_core::engine::SubmitError;
use tasklatch_core::store::AnswerOutcome;
use tasklatch_worker::api::router;

/// How long one real database check takes here (the pool's acquire timeout).
const CHECK_TAKES: Duration = Duration::from_millis(600);

/// No task calls are made by these tests.
fn no_tasks() -> NoTasks {
    NoTasks {
        submit: || SubmitError::NotStarted("not in this test".into()),
        answer: || Ok(AnswerOutcome::NotFound),
    }
}

/// The router over a database that never answers, serving `max_in_flight` at once. The
/// listener is returned to keep it open.
async fn app(max_in_flight: usize) -> (Router, tokio::net::TcpListener) {
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let port = silent.local_addr().unwrap_or_else(|e| panic!("{e}")).port();
    let url = format!("postgres://u@127.0.0.1:{port}/db");
    let pool = lazy_pool(&url, Some(CHECK_TAKES));
    let tasks = Arc::new(no_tasks());
    let state = app_state(tasks, 5, bearer(&[]), &[], Arc::new(EveryThread), pool);
    (router(state, 4 << 10, max_in_flight), silent)
}

/// `GET path`: the status and how long the answer took.
async fn get(app: &Router, path: &str) -> (StatusCode, Duration, Option<String>) {
    let req = request(Method::GET, path, None, None);
    let start = Instant::now();
    let res = send(app, req).await;
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
