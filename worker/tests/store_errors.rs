//! What the API says when the task store refuses data (issue 22 LOW): a fixed 422 message,
//! never the store's own text (constraint names, SQLSTATEs), for a submit and for an answer.

use axum::body::Body;
use axum::http::{header, Method, Request, StatusCode};
use axum::Router;
use http_body_util::BodyExt;
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;
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
use tasklatch_worker::token::hash_token;
use tower::ServiceExt;

/// What a Postgres store's `Invalid` carries.
const STORE_TEXT: &str = "constraint tasks_name_len violated (SQLSTATE 23514)";

/// A task service whose store refuses every submit and answer as invalid data.
struct RefusingStore {
    /// Whether the refusal comes while storing the intent (`Invalid`) or the handle (`Store`).
    at_intent: bool,
}

impl TaskService for RefusingStore {
    async fn submit(&self, _: &dyn IdSource, _: SubmitCommand) -> Result<TaskId, SubmitError> {
        let invalid = StoreError::Invalid(STORE_TEXT.into());
        Err(match self.at_intent {
            true => SubmitError::Invalid(STORE_TEXT.into()),
            false => SubmitError::Store(invalid),
        })
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
        Err(StoreError::Invalid(STORE_TEXT.into()))
    }
}

struct EveryThread;

impl ThreadOwners for EveryThread {
    fn usable<'a>(&'a self, _: &'a OwnerId, _: &'a ThreadId) -> OwnerCheck<'a> {
        Box::pin(async { Ok(true) })
    }
}

fn app(at_intent: bool) -> Router {
    let options = "postgres://u@127.0.0.1:1/db"
        .parse()
        .unwrap_or_else(|e| panic!("{e}"));
    let pool = sqlx::postgres::PgPoolOptions::new().connect_lazy_with(options);
    let tokens = BTreeMap::from([(hash_token("tok-alice"), OwnerId::from("alice"))]);
    let state = AppState {
        tasks: Arc::new(RefusingStore { at_intent }),
        ids: Arc::new(SeededIds::new(3)),
        auth: Arc::new(Auth::Tokens(tokens)),
        servers: Arc::new(BTreeSet::from(["fix".to_owned()])),
        threads: Arc::new(EveryThread),
        metrics: Arc::new(Metrics::new()),
        health: Arc::new(Health::new(pool, Vec::new(), Duration::from_secs(60))),
        openapi: openapi::document(["fix"]).into(),
    };
    router(state, 4 << 10, 64)
}

async fn post(app: &Router, uri: &str, body: serde_json::Value) -> (StatusCode, String) {
    let req = Request::builder()
        .method(Method::POST)
        .uri(uri)
        .header(header::AUTHORIZATION, "Bearer tok-alice")
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body.to_string()))
        .unwrap_or_else(|e| panic!("{e}"));
    let res = app
        .clone()
        .oneshot(req)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let status = res.status();
    let bytes = res
        .into_body()
        .collect()
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .to_bytes();
    (status, String::from_utf8_lossy(&bytes).into_owned())
}

#[tokio::test]
async fn store_data_errors_are_422_without_the_stores_text() {
    let thread = "0badc0de-0000-4000-8000-00000000000a";
    let submit = json!({"server": "fix", "tool": "job", "arguments": {}, "name": "report"});
    for at_intent in [true, false] {
        let (status, body) = post(
            &app(at_intent),
            &format!("/v1/threads/{thread}/tasks"),
            submit.clone(),
        )
        .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        assert!(
            !body.contains("SQLSTATE") && !body.contains("tasks_name_len"),
            "{body}"
        );
    }
    let answer = json!({"request_id": "q1", "answer": {"colour": "blue"}});
    let uri = format!("/v1/threads/{thread}/tasks/tsk_1/answer");
    let (status, body) = post(&app(true), &uri, answer).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert!(
        !body.contains("SQLSTATE") && !body.contains("tasks_name_len"),
        "{body}"
    );
}
