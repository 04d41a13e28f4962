//! Who is looking at a `/ui` page: the owner of the browser session named by the
//! [`COOKIE`] cookie ([`super::sessions`]). No cookie, or one naming no live session, is a
//! 401 with the token form ([`UiError::SignIn`]).

use super::error::UiError;
use super::sessions::Session;
use crate::api::{AppState, TaskService};
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{header, HeaderMap};
use tasklatch_core::ids::OwnerId;

/// The session cookie's name.
pub const COOKIE: &str = "tasklatch_ui";
/// Bytes of a `/ui/threads/…` path kept to come back to after signing in, at most.
const MAX_NEXT: usize = 1_024;

/// The signed-in owner and the session's CSRF token.
pub struct Visitor {
    /// Whose tasks this browser may see and steer.
    pub owner: OwnerId,
    /// The token its state-changing requests must carry.
    pub csrf: String,
}

impl<T: TaskService> FromRequestParts<AppState<T>> for Visitor {
    type Rejection = UiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState<T>,
    ) -> Result<Self, Self::Rejection> {
        let session = state
            .ui
            .as_ref()
            .zip(cookie(&parts.headers))
            .and_then(|(panel, id)| panel.sessions.get(id));
        match session {
            Some(Session { owner, csrf, .. }) => Ok(Visitor { owner, csrf }),
            None => Err(UiError::SignIn {
                next: come_back_to(parts.uri.path()),
            }),
        }
    }
}

/// The value of the [`COOKIE`] cookie, if the request has exactly one.
fn cookie(headers: &HeaderMap) -> Option<&str> {
    let mut found = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .filter(|(name, _)| *name == COOKIE)
        .map(|(_, value)| value);
    let first = found.next()?;
    found.next().is_none().then_some(first)
}

/// `path` when it is a panel page to come back to after signing in, else empty.
pub fn come_back_to(path: &str) -> String {
    let page = path.starts_with("/ui/threads/")
        && path.len() <= MAX_NEXT
        && !path.contains("//")
        && path.bytes().all(|b| b.is_ascii_graphic() && b != b'\\');
    if page {
        path.to_owned()
    } else {
        String::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn the_cookie_is_read_once_or_not_at_all() {
        let mut h = HeaderMap::new();
        assert_eq!(cookie(&h), None);
        h.insert(
            header::COOKIE,
            HeaderValue::from_static("a=1; tasklatch_ui=abc; b=2"),
        );
        assert_eq!(cookie(&h), Some("abc"));
        h.append(header::COOKIE, HeaderValue::from_static("tasklatch_ui=def"));
        assert_eq!(cookie(&h), None, "two sessions: which one is unknowable");
    }

    #[test]
    fn only_panel_pages_are_come_back_to() {
        assert_eq!(come_back_to("/ui/threads/t%201"), "/ui/threads/t%201");
        assert_eq!(come_back_to("/ui/session"), "");
        assert_eq!(come_back_to("/ui/threads//evil.example"), "");
        assert_eq!(come_back_to("https://evil.example/ui/threads/x"), "");
    }
}
