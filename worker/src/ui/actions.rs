//! The panel's state-changing forms: `POST /ui/threads/{thread}/tasks/{task}/cancel` and
//! `…/answer`, each carrying the session's CSRF token (checked first: without it, or with
//! another, 403 and nothing is read or written). Then the API's own calls do the work — the
//! cancel (`api::tasks::cancel`) and the answer (`api::answers::answer_task`, the same store
//! call as `POST /v1/…/answer`) — with their scope rules: another owner's task is 404. Done:
//! 303 back to the panel.

use super::csrf;
use super::error::UiError;
use super::escape::segment;
use super::visitor::Visitor;
use crate::api::answers::answer_task;
use crate::api::auth::Caller;
use crate::api::shapes::AnswerBody;
use crate::api::tasks::{cancel as cancel_task, scoped_task};
use crate::api::{ApiError, AppState, TaskService};
use axum::extract::rejection::{FormRejection, PathRejection};
use axum::extract::{Form, Path, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use tasklatch_core::store::{CancelTarget, Scope};

/// The cancel form.
#[derive(Deserialize, Default)]
pub struct CancelForm {
    /// The session's CSRF token.
    csrf: Option<String>,
}

/// The answer form.
#[derive(Deserialize, Default)]
pub struct AnswerForm {
    /// The session's CSRF token.
    csrf: Option<String>,
    /// The question answered.
    request_id: Option<String>,
    /// The answer: a JSON object, sent as the API's `answer`.
    answer: Option<String>,
}

/// Cancel one task (the module's contract).
pub async fn cancel<T: TaskService>(
    State(st): State<AppState<T>>,
    visitor: Visitor,
    headers: HeaderMap,
    path: Result<Path<(String, String)>, PathRejection>,
    form: Result<Form<CancelForm>, FormRejection>,
) -> Result<Response, UiError> {
    let form = form.map(|Form(f)| f).unwrap_or_default();
    csrf::check(&headers, &visitor.csrf, form.csrf.as_deref())?;
    let (scope, id) = scoped_task(Caller(visitor.owner), path)?;
    cancel_task(&st, &scope, &CancelTarget::Id(id)).await?;
    Ok(back_to(&scope))
}

/// Answer a question of one task (the module's contract).
pub async fn answer<T: TaskService>(
    State(st): State<AppState<T>>,
    visitor: Visitor,
    headers: HeaderMap,
    path: Result<Path<(String, String)>, PathRejection>,
    form: Result<Form<AnswerForm>, FormRejection>,
) -> Result<Response, UiError> {
    let form = form.map(|Form(f)| f).unwrap_or_default();
    csrf::check(&headers, &visitor.csrf, form.csrf.as_deref())?;
    let (scope, id) = scoped_task(Caller(visitor.owner), path)?;
    let answer = form
        .answer
        .as_deref()
        .and_then(|a| serde_json::from_str::<serde_json::Value>(a).ok())
        .and_then(|v| match v {
            serde_json::Value::Object(map) => Some(map),
            _ => None,
        })
        .ok_or_else(|| ApiError::invalid("the answer must be a JSON object"))?;
    let body = AnswerBody {
        request_id: form.request_id.unwrap_or_default(),
        answer,
    };
    answer_task(&st, &scope, id, body).await?;
    Ok(back_to(&scope))
}

/// 303 to the scope's panel.
fn back_to(scope: &Scope) -> Response {
    let to = format!("/ui/threads/{}", segment(&scope.thread.0));
    match HeaderValue::from_str(&to) {
        Ok(to) => (StatusCode::SEE_OTHER, [(header::LOCATION, to)]).into_response(),
        Err(_) => StatusCode::NO_CONTENT.into_response(),
    }
}
