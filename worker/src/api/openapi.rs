//! The OpenAPI document, generated from the handlers' annotations and the body types.

use super::error::ErrorBody;
use super::health::{self, DatabaseReport, Readiness};
use super::shapes::{
    AnswerBody, AnswerInfo, AnswerResult, AnswerState, Answered, CancelByName, CancelResult,
    CancelState, Cancelled, NotificationStatus, Status, SubmitBody, Submitted, Task,
    TaskDetailBody, TaskList,
};
use super::{answers, tasks};
use crate::peers::{AgentServerReport, AssistantState, PeerReport, PeersReport};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{RefOr, Schema};
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
        answers::answer,
        health::healthz,
        health::readyz,
        health::metrics,
        health::openapi,
    ),
    components(schemas(
        SubmitBody, CancelByName, Submitted, Task, TaskDetailBody, TaskList, Cancelled,
        CancelResult, Status, NotificationStatus, ErrorBody, Readiness, AnswerBody, Answered,
        AnswerResult, AnswerInfo, AnswerState, PeersReport, AgentServerReport, PeerReport, DatabaseReport,
        AssistantState, CancelState
    )),
    modifiers(&BearerScheme),
    tags(
        (name = "tasks", description = "Remote tasks, scoped to (owner, thread)"),
        (name = "operations", description = "Health, readiness (with the peers' health), metrics")
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

/// The document as JSON text, with the submit body's `server` limited to `servers` (the
/// configured MCP server ids), so clients and fuzzers see what this worker accepts; with the
/// panel's JSON endpoints when `panel` (the panel is served).
pub fn document<'a>(servers: impl IntoIterator<Item = &'a str>, panel: bool) -> String {
    let mut doc = ApiDoc::openapi();
    if panel {
        doc.merge(crate::ui::openapi::document());
    }
    let servers: Vec<&str> = servers.into_iter().collect();
    let server = doc
        .components
        .as_mut()
        .and_then(|c| c.schemas.get_mut("SubmitBody"))
        .and_then(|s| match s {
            RefOr::T(Schema::Object(body)) => body.properties.get_mut("server"),
            _ => None,
        });
    if let Some(RefOr::T(Schema::Object(server))) = server {
        server.enum_values = Some(servers.iter().map(|s| (*s).into()).collect());
    }
    let mut json = serde_json::to_value(&doc).unwrap_or_default();
    fix_links(&mut json);
    json.to_string()
}

/// utoipa 5.5 writes a link's fields in snake case (`operation_id`); OpenAPI spells them in
/// camel case (`operationId`), and clients ignore a link without it.
fn fix_links(doc: &mut serde_json::Value) {
    let Some(paths) = doc.get_mut("paths").and_then(|p| p.as_object_mut()) else {
        return;
    };
    let responses = paths
        .values_mut()
        .filter_map(|item| item.as_object_mut())
        .flat_map(|item| item.values_mut())
        .filter_map(|op| op.get_mut("responses").and_then(|r| r.as_object_mut()))
        .flat_map(|r| r.values_mut());
    for response in responses {
        let Some(links) = response.get_mut("links").and_then(|l| l.as_object_mut()) else {
            continue;
        };
        for link in links.values_mut().filter_map(|l| l.as_object_mut()) {
            for (from, to) in [
                ("operation_id", "operationId"),
                ("operation_ref", "operationRef"),
                ("request_body", "requestBody"),
            ] {
                if let Some(v) = link.remove(from) {
                    link.insert(to.to_owned(), v);
                }
            }
        }
    }
}
