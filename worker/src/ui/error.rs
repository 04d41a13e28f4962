//! The panel's refusals, as small HTML pages with the API's status codes: 401 with the token
//! form when there is no session, 403 for a state-changing request without the session's
//! CSRF token (or from another site), and every API error (404 for anything outside the
//! owner's scope, exactly like the API; 409, 422, 503) with its bounded, secret-free message.

use super::escape::html;
use super::layout::document;
use crate::api::ApiError;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{Html, IntoResponse, Response};

/// Why a `/ui` request was refused.
#[derive(Debug)]
pub enum UiError {
    /// No live session: 401 with the form that exchanges a token for one, then goes to
    /// `next` (a `/ui/threads/…` path, or empty).
    SignIn {
        /// Where to go once signed in.
        next: String,
    },
    /// A state-changing request without the session's CSRF token, or from another site.
    Forbidden,
    /// What the shared API calls answered.
    Api(ApiError),
}

impl From<ApiError> for UiError {
    fn from(e: ApiError) -> Self {
        UiError::Api(e)
    }
}

impl IntoResponse for UiError {
    fn into_response(self) -> Response {
        match self {
            UiError::SignIn { next } => sign_in(&next),
            UiError::Forbidden => page(
                StatusCode::FORBIDDEN,
                "refused: reload the panel and try again",
            ),
            UiError::Api(e) => page(e.status(), e.message()),
        }
    }
}

fn page(status: StatusCode, message: &str) -> Response {
    let body = format!(
        "<main class=\"refusal\"><h1>{}</h1><p>{}</p></main>",
        status.as_u16(),
        html(message)
    );
    (status, Html(document("Background tasks", "", &body))).into_response()
}

/// 401 with the token form (`POST /ui/session`): the token goes in a password field, once.
fn sign_in(next: &str) -> Response {
    let body = format!(
        "<main class=\"sign-in\"><h1>Background tasks</h1>\
         <form method=\"post\" action=\"/ui/session\">\
         <label>API token \
         <input type=\"password\" name=\"token\" autocomplete=\"off\" required></label>\
         <input type=\"hidden\" name=\"next\" value=\"{}\">\
         <button type=\"submit\">Open the panel</button></form></main>",
        html(next)
    );
    let mut res = (
        StatusCode::UNAUTHORIZED,
        Html(document("Background tasks: sign in", "", &body)),
    )
        .into_response();
    res.headers_mut()
        .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    res
}
