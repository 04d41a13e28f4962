//! The panel's JSON endpoints in the worker's OpenAPI document (when the panel is served):
//! the listing and the detail ([`super::json`]), authenticated by the session cookie the
//! token exchange sets (`POST /ui/session`), with their `ETag`/304 behaviour. The HTML pages,
//! the forms and the push stream are a browser surface and stay out of the document.

use super::json;
use super::visitor::COOKIE;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, SecurityScheme};
use utoipa::{Modify, OpenApi};

/// The panel's part of the document.
#[derive(OpenApi)]
#[openapi(
    paths(json::list, json::detail),
    modifiers(&SessionScheme),
    tags((name = "panel", description = "The background-task panel's JSON, for a browser \
                                         session (the cookie of POST /ui/session)"))
)]
struct PanelApi;

struct SessionScheme;

impl Modify for SessionScheme {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "panel_session",
            SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::with_description(
                COOKIE,
                "The panel's session id, from POST /ui/session (the API token exchanged once)",
            ))),
        );
    }
}

/// The panel's paths, tag and security scheme, to merge into the API's document.
pub fn document() -> utoipa::openapi::OpenApi {
    PanelApi::openapi()
}

#[cfg(test)]
mod tests {
    use crate::api::openapi;
    use serde_json::Value;

    fn doc(panel: bool) -> Value {
        let text = openapi::document(["fix"], panel);
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn the_panel_json_is_documented_only_when_the_panel_is_served() {
        let with = doc(true);
        for path in [
            "/ui/threads/{thread}/tasks",
            "/ui/threads/{thread}/tasks/{task}",
        ] {
            let get = &with["paths"][path]["get"];
            assert_eq!(
                get["security"][0]["panel_session"],
                Value::Array(vec![]),
                "{path}"
            );
            assert!(get["responses"]["304"].is_object(), "{path}");
        }
        let scheme = &with["components"]["securitySchemes"]["panel_session"];
        assert_eq!(
            (&scheme["in"], &scheme["name"]),
            (&"cookie".into(), &"tasklatch_ui".into())
        );
        assert!(with["components"]["securitySchemes"]["bearer"].is_object());
        let without = doc(false);
        assert!(without["paths"]["/ui/threads/{thread}/tasks"].is_null());
        assert!(without["components"]["securitySchemes"]["panel_session"].is_null());
    }
}
