//! What the API says when the task store refuses data (issue 22 LOW): a fixed 422 message,
//! never the store's own text (constraint names, SQLSTATEs), for a submit and for an answer.

mod support;

use axum::http::{Method, StatusCode};
use axum::Router;
use serde_json::json;
use std::sync::Arc;
use support::{app_state, bearer, call, lazy_pool, EveryThread, NoTasks};
use tasklatch_core::engine::SubmitError;
use tasklatch_core::store::StoreError;
use tasklatch_worker::api::router;

/// What a Postgres store's `Invalid` carries.
const STORE_TEXT: &str = "constraint tasks_name_len violated (SQLSTATE 23514)";

/// A task service whose store refuses every submit and answer as invalid data: `at_intent`
/// tells whether the refusal comes while storing the intent (`Invalid`) or the handle
/// (`Store`).
fn refusing_store(at_intent: bool) -> NoTasks {
    NoTasks {
        submit: match at_intent {
            true => || SubmitError::Invalid(STORE_TEXT.into()),
            false => || SubmitError::Store(StoreError::Invalid(STORE_TEXT.into())),
        },
        answer: || Err(StoreError::Invalid(STORE_TEXT.into())),
    }
}

fn app(at_intent: bool) -> Router {
    let pool = lazy_pool("postgres://u@127.0.0.1:1/db", None);
    let auth = bearer(&[("tok-alice", "alice")]);
    let tasks = Arc::new(refusing_store(at_intent));
    let state = app_state(tasks, 3, auth, &["fix"], Arc::new(EveryThread), pool);
    router(state, 4 << 10, 64)
}

async fn post(app: &Router, uri: &str, body: serde_json::Value) -> (StatusCode, String) {
    let body = body.to_string();
    let (status, _, text) = call(app, Method::POST, uri, Some("tok-alice"), Some(&body)).await;
    (status, text)
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
