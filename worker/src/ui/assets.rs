//! The panel's script and style sheet, compiled into the binary (`include_str!` of the files
//! under `ui/assets/`): no build step, no CDN. Served at `/ui/assets/{name}`.

use axum::extract::Path;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

/// The panel's script: live updates by push, polling as the fallback.
const PANEL_JS: &str = include_str!("assets/panel.js");
/// The panel's style sheet.
const PANEL_CSS: &str = include_str!("assets/panel.css");
/// How long a browser may keep an asset without asking again (they change only with the
/// binary; a page load after an upgrade may use the old ones for this long).
const CACHE_CONTROL: &str = "private, max-age=300";

/// `GET /ui/assets/{name}`: the asset, or 404.
pub async fn asset(Path(name): Path<String>) -> Response {
    let (body, kind) = match name.as_str() {
        "panel.js" => (PANEL_JS, "text/javascript; charset=utf-8"),
        "panel.css" => (PANEL_CSS, "text/css; charset=utf-8"),
        _ => return StatusCode::NOT_FOUND.into_response(),
    };
    (
        [
            (header::CONTENT_TYPE, HeaderValue::from_static(kind)),
            (
                header::CACHE_CONTROL,
                HeaderValue::from_static(CACHE_CONTROL),
            ),
        ],
        body,
    )
        .into_response()
}
