//! The panel's JSON: `GET /ui/threads/{thread}/tasks` (the listing, at most
//! [`PANEL_LIMIT`] tasks) and `GET /ui/threads/{thread}/tasks/{task}` (one task's detail),
//! the API's shapes from the API's own calls, for the session's owner. Each answer carries an
//! `ETag` (a hash of its body); a request whose `If-None-Match` names it gets `304 Not
//! Modified` with no body — the script's poll, when the push stream is down, costs a 304
//! while nothing changed. Errors are the API's JSON errors.

use super::page::PANEL_LIMIT;
use super::visitor::Visitor;
use crate::api::auth::Caller;
use crate::api::error::ErrorBody;
use crate::api::shapes::{TaskDetailBody, TaskList};
use crate::api::tasks::{list_tasks, scope_of, scoped_task, task_detail};
use crate::api::{ApiError, AppState, TaskService};
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use sha2::{Digest, Sha256};

/// Hex digits of the body's SHA-256 in an ETag (128 bits).
const ETAG_HEX: usize = 32;

/// The listing (the module's contract).
#[utoipa::path(
    get,
    path = "/ui/threads/{thread}/tasks",
    operation_id = "panel_list",
    tag = "panel",
    params(
        ("thread" = String, Path, description = "The conversation", min_length = 1, max_length = 200, pattern = r"^[^\u0000-\u001f\u007f-\u009f]+$"),
        ("If-None-Match" = Option<String>, Header, description = "The ETag of an earlier answer: 304 with no body while it still matches"),
    ),
    responses(
        (status = 200, description = "The session owner's tasks in the thread, newest first, at most 20 (another owner's thread lists nothing)", body = TaskList,
            headers(("ETag" = String, description = "A hash of the body"))),
        (status = 304, description = "Unchanged since the ETag named", headers(("ETag" = String, description = "The same ETag"))),
        (status = 401, description = "No session: the sign-in form", content_type = "text/html", body = String),
        (status = 404, description = "No such thread can exist", body = ErrorBody),
        (status = 503, description = "The task store is unavailable", body = ErrorBody),
    ),
    security(("panel_session" = []))
)]
pub async fn list<T: TaskService>(
    State(st): State<AppState<T>>,
    visitor: Visitor,
    headers: HeaderMap,
    path: Result<Path<String>, PathRejection>,
) -> Result<Response, ApiError> {
    let scope = scope_of(Caller(visitor.owner), path, ApiError::not_found)?;
    let body = list_tasks(&st, &scope, Some(PANEL_LIMIT)).await?;
    tagged(&headers, &body)
}

/// One task's detail (the module's contract).
#[utoipa::path(
    get,
    path = "/ui/threads/{thread}/tasks/{task}",
    operation_id = "panel_detail",
    tag = "panel",
    params(
        ("thread" = String, Path, description = "The conversation", min_length = 1, max_length = 200, pattern = r"^[^\u0000-\u001f\u007f-\u009f]+$"),
        ("task" = String, Path, description = "The task's id", min_length = 1, max_length = 200, pattern = r"^[^\u0000-\u001f\u007f-\u009f]+$"),
        ("If-None-Match" = Option<String>, Header, description = "The ETag of an earlier answer: 304 with no body while it still matches"),
    ),
    responses(
        (status = 200, description = "The task", body = TaskDetailBody,
            headers(("ETag" = String, description = "A hash of the body"))),
        (status = 304, description = "Unchanged since the ETag named", headers(("ETag" = String, description = "The same ETag"))),
        (status = 401, description = "No session: the sign-in form", content_type = "text/html", body = String),
        (status = 404, description = "No such task in the session owner's scope", body = ErrorBody),
        (status = 503, description = "The task store is unavailable", body = ErrorBody),
    ),
    security(("panel_session" = []))
)]
pub async fn detail<T: TaskService>(
    State(st): State<AppState<T>>,
    visitor: Visitor,
    headers: HeaderMap,
    path: Result<Path<(String, String)>, PathRejection>,
) -> Result<Response, ApiError> {
    let (scope, id) = scoped_task(Caller(visitor.owner), path)?;
    let body = task_detail(&st, &scope, &id).await?;
    tagged(&headers, &body)
}

/// `body` as JSON with its ETag, or 304 when `If-None-Match` names that ETag.
fn tagged<B: Serialize>(headers: &HeaderMap, body: &B) -> Result<Response, ApiError> {
    let bytes = serde_json::to_vec(body).map_err(|_| ApiError::unavailable())?;
    let digest = hex::encode(Sha256::digest(&bytes));
    let etag = format!("\"{}\"", &digest[..ETAG_HEX]);
    let tag = HeaderValue::from_str(&etag).map_err(|_| ApiError::unavailable())?;
    if matches(headers, &etag) {
        return Ok((StatusCode::NOT_MODIFIED, [(header::ETAG, tag)]).into_response());
    }
    let kind = HeaderValue::from_static("application/json");
    Ok(([(header::CONTENT_TYPE, kind), (header::ETAG, tag)], bytes).into_response())
}

/// Whether `If-None-Match` names `etag` (weakly compared, as RFC 9110 asks for it) or is `*`.
fn matches(headers: &HeaderMap, etag: &str) -> bool {
    headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .any(|t| t == "*" || t.strip_prefix("W/").unwrap_or(t) == etag)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn if_none_match_is_compared_weakly_in_a_list() {
        let mut h = HeaderMap::new();
        assert!(!matches(&h, "\"ab\""));
        h.insert(
            header::IF_NONE_MATCH,
            HeaderValue::from_static("\"x\", W/\"ab\""),
        );
        assert!(matches(&h, "\"ab\""));
        h.insert(header::IF_NONE_MATCH, HeaderValue::from_static("\"abc\""));
        assert!(!matches(&h, "\"ab\""));
        h.insert(header::IF_NONE_MATCH, HeaderValue::from_static("*"));
        assert!(matches(&h, "\"ab\""));
    }
}
