//! The scope of a tool call: the owner from the credential, the thread from the runtime.
//!
//! [`authenticate`] runs before `/mcp`: the same authentication as the API
//! ([`crate::api::auth::owner_of`]); without usable credentials the answer is 401, else the
//! owner rides in the request's extensions as [`Owner`]. rmcp hands each tool call the
//! request's parts, from which [`scope_of`] takes that owner and the thread: the value of the
//! configured header (`agent_tools.thread_header`), which the agent runtime sets for the run
//! it makes the call in. A model can choose tool arguments but not headers, so it can never
//! name another thread; a call without the header (or with it twice, or with an id no thread
//! can have) is refused. A thread of another owner is then exactly what the API makes of it:
//! nothing listed, "not found", refused at submit.

use crate::api::auth::owner_of;
use crate::api::ApiError;
use crate::config::{valid_id, Auth};
use axum::extract::{Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderName, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;
use tasklatch_core::ids::{OwnerId, ThreadId};
use tasklatch_core::store::Scope;

/// The owner the request's credentials authenticate.
#[derive(Clone, Debug)]
pub struct Owner(pub OwnerId);

/// Lets through only a request whose credentials name an owner, with that [`Owner`] in its
/// extensions; any other gets the API's 401.
pub async fn authenticate(State(auth): State<Arc<Auth>>, mut req: Request, next: Next) -> Response {
    match owner_of(&auth, req.headers()) {
        Some(owner) => {
            req.extensions_mut().insert(Owner(owner));
            next.run(req).await
        }
        None => ApiError::unauthorized().into_response(),
    }
}

/// The scope of a tool call made with the request `parts`: its [`Owner`] and the thread the
/// header `thread_header` names once. A missing owner is 401 (a request that did not pass
/// [`authenticate`]); a missing, repeated or impossible thread is 400 with a message saying
/// the runtime must set the header.
pub fn scope_of(parts: Option<&Parts>, thread_header: &HeaderName) -> Result<Scope, ApiError> {
    let owner = parts
        .and_then(|p| p.extensions.get::<Owner>())
        .ok_or_else(ApiError::unauthorized)?;
    let mut values = parts
        .into_iter()
        .flat_map(|p| p.headers.get_all(thread_header).iter());
    let thread = match (values.next(), values.next()) {
        (Some(value), None) => value.to_str().ok().map(str::trim).filter(|t| valid_id(t)),
        _ => None,
    };
    let thread = thread.ok_or_else(|| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            format!(
                "no thread: these tools act on the conversation of the current run, which the \
                 agent runtime names in the {thread_header} header of each call; this call came \
                 without it (or with it twice, or with an impossible thread id)"
            ),
        )
    })?;
    Ok(Scope {
        owner: owner.0.clone(),
        thread: ThreadId::from(thread),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::{HeaderValue, Request};

    fn parts(owner: Option<&str>, threads: &[&str]) -> Parts {
        let (mut parts, ()) = Request::new(()).into_parts();
        if let Some(o) = owner {
            parts.extensions.insert(Owner(OwnerId::from(o)));
        }
        for t in threads {
            let value = HeaderValue::from_str(t).unwrap_or_else(|e| panic!("{e}"));
            parts.headers.append("x-run-thread", value);
        }
        parts
    }

    #[test]
    fn the_thread_comes_from_the_header_once_and_the_owner_from_the_credential() {
        let header = HeaderName::from_static("x-run-thread");
        let scope = scope_of(Some(&parts(Some("alice"), &["t-1"])), &header)
            .unwrap_or_else(|e| panic!("{}", e.message()));
        assert_eq!(scope.owner, OwnerId::from("alice"));
        assert_eq!(scope.thread, ThreadId::from("t-1"));
        for threads in [&[][..], &["t-1", "t-2"], &[""], &["   "]] {
            let e = scope_of(Some(&parts(Some("alice"), threads)), &header).err();
            let e = e.unwrap_or_else(|| panic!("{threads:?} accepted"));
            assert_eq!(e.status(), StatusCode::BAD_REQUEST);
            assert!(e.message().contains("x-run-thread"), "{}", e.message());
        }
        let e = scope_of(Some(&parts(None, &["t-1"])), &header).err();
        assert_eq!(e.map(|e| e.status()), Some(StatusCode::UNAUTHORIZED));
        let e = scope_of(None, &header).err();
        assert_eq!(e.map(|e| e.status()), Some(StatusCode::UNAUTHORIZED));
    }
}
