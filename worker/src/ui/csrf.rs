//! What makes a state-changing `/ui` request (a cancel, an answer, the session exchange)
//! acceptable: it does not come from another site (`Sec-Fetch-Site: cross-site`, sent by every
//! current browser), and — once there is a session — it carries the session's synchronizer
//! token, compared in constant time. The SameSite=Strict cookie is the first line; this is
//! the second.

use super::error::UiError;
use axum::http::HeaderMap;

/// The form field that carries the token.
pub const FIELD: &str = "csrf";

/// `Err(Forbidden)` when a browser says the request comes from another site.
pub fn same_site(headers: &HeaderMap) -> Result<(), UiError> {
    let cross = headers
        .get("sec-fetch-site")
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"cross-site"));
    if cross {
        return Err(UiError::Forbidden);
    }
    Ok(())
}

/// `Err(Forbidden)` unless `given` is the session's token `expected` (and [`same_site`]).
pub fn check(headers: &HeaderMap, expected: &str, given: Option<&str>) -> Result<(), UiError> {
    same_site(headers)?;
    match given {
        Some(g) if same_token(g, expected) => Ok(()),
        _ => Err(UiError::Forbidden),
    }
}

/// Whether `given` equals `expected`, in time that depends on their lengths only (a token
/// compared byte by byte would tell an attacker how many leading bytes are right).
fn same_token(given: &str, expected: &str) -> bool {
    let (a, b) = (given.as_bytes(), expected.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn only_the_sessions_token_from_this_site_passes() {
        let mut h = HeaderMap::new();
        assert!(check(&h, "abc", Some("abc")).is_ok());
        assert!(check(&h, "abc", Some("abd")).is_err());
        assert!(check(&h, "abc", Some("ab")).is_err());
        assert!(check(&h, "abc", Some("")).is_err());
        assert!(check(&h, "abc", None).is_err());
        h.insert("sec-fetch-site", HeaderValue::from_static("same-origin"));
        assert!(check(&h, "abc", Some("abc")).is_ok());
        h.insert("sec-fetch-site", HeaderValue::from_static("cross-site"));
        assert!(check(&h, "abc", Some("abc")).is_err());
    }
}
