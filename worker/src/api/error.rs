//! Every API error is a JSON body `{"error": "…"}` with a 4xx or 503/502 status — never a 500,
//! never a secret, never a store or database detail.

use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;
use tasklatch_core::policy::bounded;
use utoipa::ToSchema;

/// Characters of an error message, at most.
const MAX_MESSAGE: usize = 300;

/// The body of every error answer.
#[derive(Serialize, ToSchema)]
pub struct ErrorBody {
    /// What went wrong, for a human.
    pub error: String,
}

/// An error answer: a status and a message.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    message: String,
}

impl ApiError {
    /// An answer with `status` and `message` (bounded).
    pub fn new(status: StatusCode, message: impl AsRef<str>) -> Self {
        ApiError {
            status,
            message: bounded(message.as_ref(), MAX_MESSAGE),
        }
    }

    /// 404: nothing of that name in the caller's scope (other owners' tasks included).
    pub fn not_found() -> Self {
        ApiError::new(StatusCode::NOT_FOUND, "not found")
    }

    /// 401: no usable credentials.
    pub fn unauthorized() -> Self {
        ApiError::new(
            StatusCode::UNAUTHORIZED,
            "missing or unknown credentials: send Authorization: Bearer <token>",
        )
    }

    /// 422: the request is well-formed JSON but breaks a rule.
    pub fn invalid(message: impl AsRef<str>) -> Self {
        ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, message)
    }

    /// 503: the store could not be reached; the details stay in the worker's log.
    pub fn unavailable() -> Self {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "the task store is unavailable; try again",
        )
    }

    /// The status.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The message (bounded; never a secret, never a store detail).
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (
            self.status,
            Json(ErrorBody {
                error: self.message,
            }),
        )
            .into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response
    }
}

impl From<JsonRejection> for ApiError {
    /// Keeps axum's status (400 syntax, 413 too large, 415 not JSON, 422 wrong shape) with its
    /// message, bounded.
    fn from(r: JsonRejection) -> Self {
        ApiError::new(r.status(), r.body_text())
    }
}

impl From<PathRejection> for ApiError {
    fn from(r: PathRejection) -> Self {
        ApiError::new(StatusCode::BAD_REQUEST, r.body_text())
    }
}

impl From<QueryRejection> for ApiError {
    fn from(r: QueryRejection) -> Self {
        ApiError::new(StatusCode::BAD_REQUEST, r.body_text())
    }
}
