//! The OpenAPI document, generated from the handlers' annotations and the body types.

use super::error::ErrorBody;
use super::health::{self, Readiness};
use super::shapes::{
    CancelByName, CancelResult, Cancelled, NotificationStatus, Status, SubmitBody, Submitted, Task,
    TaskDetailBody, TaskList,
};
use super::tasks;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

/// The worker's API.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "tasklatch worker",
        description = "Submit, list, inspect and cancel remote MCP tasks whose final state is \
                       delivered to the conversation that started them. Every task call is \
                       scoped to the authenticated owner and the thread in the path; anything \
                       else is 404."
    ),
    paths(
        tasks::submit,
        tasks::list,
        tasks::detail,
        tasks::cancel_by_id,
        tasks::cancel_by_name,
        health::healthz,
        health::readyz,
        health::metrics,
        health::openapi,
    ),
    components(schemas(
        SubmitBody, CancelByName, Submitted, Task, TaskDetailBody, TaskList, Cancelled,
        CancelResult, Status, NotificationStatus, ErrorBody, Readiness
    )),
    modifiers(&BearerScheme),
    tags(
        (name = "tasks", description = "Remote tasks, scoped to (owner, thread)"),
        (name = "operations", description = "Health, readiness, metrics")
    )
)]
pub struct ApiDoc;

struct BearerScheme;

impl Modify for BearerScheme {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

/// The document as JSON text.
pub fn document() -> String {
    ApiDoc::openapi()
        .to_json()
        .unwrap_or_else(|_| "{}".to_owned())
}
