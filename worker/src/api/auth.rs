//! Who is calling: the owner every task call is scoped to.
//!
//! - Mode `tokens`: `Authorization: Bearer <token>`; the token's SHA-256 is looked up among the
//!   configured hashes. The file never holds a token, and a lookup by hash reveals nothing
//!   about any token through its timing (finding a token from a hash prefix is a preimage
//!   attack).
//! - Mode `trusted_proxy` (switched on explicitly): a reverse proxy has authenticated the
//!   caller and names the owner in the configured header. Only safe when nothing but that proxy
//!   can reach the listener. A request carrying that header more than once is refused: which
//!   one the proxy set cannot be told.
//!
//! No credentials, unknown credentials, or an owner name that is not a valid id: 401.

use super::error::ApiError;
use super::{AppState, TaskService};
use crate::config::{valid_id, Auth};
use crate::token::hash_token;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{header, HeaderMap};
use tasklatch_core::ids::OwnerId;

/// Bytes of a bearer token, at most.
const MAX_TOKEN: usize = 1_024;

/// The authenticated owner.
pub struct Caller(pub OwnerId);

impl<T: TaskService> FromRequestParts<AppState<T>> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState<T>,
    ) -> Result<Self, Self::Rejection> {
        owner_of(&state.auth, &parts.headers)
            .map(Caller)
            .ok_or_else(ApiError::unauthorized)
    }
}

/// The owner `headers` authenticate under `auth`, if any.
pub fn owner_of(auth: &Auth, headers: &HeaderMap) -> Option<OwnerId> {
    match auth {
        Auth::Tokens(hashes) => {
            let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
            let (scheme, token) = value.trim().split_once(' ')?;
            let token = token.trim();
            if !scheme.eq_ignore_ascii_case("bearer") || token.is_empty() || token.len() > MAX_TOKEN
            {
                return None;
            }
            hashes.get(&hash_token(token)).cloned()
        }
        Auth::TrustedProxy(name) => {
            let mut values = headers.get_all(name.as_str()).iter();
            let (first, again) = (values.next()?, values.next());
            if again.is_some() {
                // Which one the proxy set is unknowable: a caller may have added the other.
                return None;
            }
            let owner = first.to_str().ok()?.trim();
            valid_id(owner).then(|| OwnerId::from(owner))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;
    use std::collections::BTreeMap;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(
                *k,
                HeaderValue::from_str(v).unwrap_or_else(|e| panic!("{e}")),
            );
        }
        h
    }

    #[test]
    fn a_bearer_token_maps_to_its_owner_by_hash() {
        let auth = Auth::Tokens(BTreeMap::from([(
            hash_token("tok-alice"),
            OwnerId::from("alice"),
        )]));
        let owner = |v: &str| owner_of(&auth, &headers(&[("authorization", v)]));
        assert_eq!(owner("Bearer tok-alice"), Some(OwnerId::from("alice")));
        assert_eq!(owner("bearer  tok-alice "), Some(OwnerId::from("alice")));
        assert_eq!(owner("Bearer tok-bob"), None);
        assert_eq!(owner("Basic tok-alice"), None);
        assert_eq!(owner("Bearer"), None);
        assert_eq!(owner_of(&auth, &HeaderMap::new()), None);
        // The hash itself is not a token.
        assert_eq!(owner(&format!("Bearer {}", hash_token("tok-alice"))), None);
    }

    #[test]
    fn the_proxy_header_names_the_owner_only_in_proxy_mode() {
        let auth = Auth::TrustedProxy("x-user".into());
        assert_eq!(
            owner_of(&auth, &headers(&[("x-user", "carol")])),
            Some(OwnerId::from("carol"))
        );
        assert_eq!(owner_of(&auth, &headers(&[("x-user", "")])), None);
        assert_eq!(
            owner_of(&auth, &headers(&[("authorization", "Bearer x")])),
            None
        );
        let tokens = Auth::Tokens(BTreeMap::new());
        assert_eq!(owner_of(&tokens, &headers(&[("x-user", "carol")])), None);
    }

    #[test]
    fn a_repeated_proxy_header_is_refused() {
        let auth = Auth::TrustedProxy("x-user".into());
        let mut twice = headers(&[("x-user", "mallory")]);
        twice.append("x-user", HeaderValue::from_static("carol"));
        assert_eq!(owner_of(&auth, &twice), None);
        twice.remove("x-user");
        twice.append("x-user", HeaderValue::from_static("carol"));
        twice.append("x-user", HeaderValue::from_static("carol"));
        assert_eq!(owner_of(&auth, &twice), None, "even twice the same");
    }
}
