//! The headers every `/ui` answer carries: a strict Content-Security-Policy (nothing but the
//! panel's own script, style and requests; no inline script or style; forms post only to the
//! worker; framing only by the configured `ui.frame_ancestors`, default `'none'`), no MIME
//! sniffing, no referrer, and no caching of pages that hold a CSRF token.

use super::Panel;
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue};
use axum::middleware::Next;
use axum::response::Response;
use std::sync::Arc;

/// The policy with `frame_ancestors` (a checked source list: `crate::config::Ui`).
pub fn content_security_policy(frame_ancestors: &str) -> String {
    format!(
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; \
         img-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors {frame_ancestors}"
    )
}

/// The middleware: runs the request, then sets the headers on its answer (an answer that set
/// its own `Cache-Control`, an asset's, keeps it).
pub async fn secure(State(panel): State<Arc<Panel>>, req: Request, next: Next) -> Response {
    let mut res = next.run(req).await;
    let h = res.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&panel.csp) {
        h.insert(header::CONTENT_SECURITY_POLICY, v);
    }
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.entry(header::CACHE_CONTROL)
        .or_insert(HeaderValue::from_static("no-store"));
    res
}
