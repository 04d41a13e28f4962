//! `POST /ui/session`: the token exchange. The bearer token comes once, in the form field
//! `token` (the sign-in page's) or the `Authorization` header (a chat app opening the panel
//! for its user); in `trusted_proxy` mode the proxy's header names the owner instead. The
//! answer sets the session cookie — HttpOnly, SameSite=Strict, `Path=/ui`, `Secure` when
//! `ui.secure_cookie` — and goes on to `next` (303) when it names a panel page, else 204.
//! Unknown credentials: 401 with the form again. From another site: 403.

use super::csrf;
use super::error::UiError;
use super::visitor::{come_back_to, COOKIE};
use crate::api::auth::owner_of;
use crate::api::{ApiError, AppState, TaskService};
use axum::extract::rejection::FormRejection;
use axum::extract::{Form, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

/// The sign-in form.
#[derive(Deserialize, Default)]
pub struct SignInForm {
    /// The API token (absent: the `Authorization` header, or the proxy's).
    #[serde(default)]
    token: Option<String>,
    /// The panel page to go to once signed in.
    #[serde(default)]
    next: Option<String>,
}

/// The exchange (the module's contract).
pub async fn sign_in<T: TaskService>(
    State(st): State<AppState<T>>,
    headers: HeaderMap,
    form: Result<Form<SignInForm>, FormRejection>,
) -> Result<Response, UiError> {
    csrf::same_site(&headers)?;
    let panel = st.ui.as_ref().ok_or_else(ApiError::not_found)?;
    let form = form.map(|Form(f)| f).unwrap_or_default();
    let next = come_back_to(form.next.as_deref().unwrap_or_default());
    let mut presented = headers;
    if let Some(token) = form.token.filter(|t| !t.is_empty()) {
        let value = HeaderValue::from_str(&format!("Bearer {token}"))
            .map_err(|_| UiError::SignIn { next: next.clone() })?;
        presented.insert(header::AUTHORIZATION, value);
    }
    let Some(owner) = owner_of(&st.auth, &presented) else {
        return Err(UiError::SignIn { next });
    };
    tracing::info!(owner = %owner, "panel session started");
    let id = panel.sessions.start(owner).map_err(|_| {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "no session could be started; try again",
        )
    })?;
    let cookie = format!(
        "{COOKIE}={id}; Path=/ui; HttpOnly; SameSite=Strict; Max-Age={}{}",
        panel.config.session_ttl.as_secs(),
        if panel.config.secure_cookie {
            "; Secure"
        } else {
            ""
        }
    );
    let cookie = HeaderValue::from_str(&cookie).map_err(|_| ApiError::not_found())?;
    let mut res = if next.is_empty() {
        StatusCode::NO_CONTENT.into_response()
    } else {
        let to = HeaderValue::from_str(&next).map_err(|_| ApiError::not_found())?;
        (StatusCode::SEE_OTHER, [(header::LOCATION, to)]).into_response()
    };
    res.headers_mut().insert(header::SET_COOKIE, cookie);
    Ok(res)
}
