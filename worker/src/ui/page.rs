//! `GET /ui/threads/{thread}`: the panel of the signed-in owner's tasks in the thread —
//! an active-count badge, the active tasks, then the recent (finished) ones, each expandable
//! ([`super::task_view`]). The tasks come from the API's own calls (`list_tasks`, then
//! `task_detail` for each listed task: the same store calls, ownership checks and
//! neutralised shapes). The thread must be the owner's, as the agent server records it
//! (`check_submit_thread`, the API's submit guard): another owner's thread, or one that does
//! not exist, is 404 — and even past that check no call can read another owner's task.
//!
//! Cost: one ownership look-up, one listing and at most [`PANEL_LIMIT`] primary-key reads
//! per render; the script
//! renders again only when the thread changed (push, or a poll answered 200, not 304).

use super::error::UiError;
use super::escape::{html, segment};
use super::layout::document;
use super::task_view::{is_active, render};
use super::visitor::Visitor;
use crate::api::auth::Caller;
use crate::api::shapes::TaskDetailBody;
use crate::api::tasks::{list_tasks, scope_of, task_detail};
use crate::api::threads::check_submit_thread;
use crate::api::{ApiError, AppState, TaskService};
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Html;
use tasklatch_core::ids::TaskId;
use tasklatch_core::store::Scope;

/// Tasks shown at most: the newest of the thread.
pub const PANEL_LIMIT: usize = 20;

/// The page (the module's contract).
pub async fn page<T: TaskService>(
    State(st): State<AppState<T>>,
    visitor: Visitor,
    path: Result<Path<String>, PathRejection>,
) -> Result<Html<String>, UiError> {
    let scope = scope_of(Caller(visitor.owner), path, ApiError::not_found)?;
    check_submit_thread(st.threads.as_ref(), &scope).await?;
    let details = details(&st, &scope).await?;
    let base = format!("/ui/threads/{}", segment(&scope.thread.0));
    let body = panel(&details, &scope, &base, &visitor.csrf);
    let attrs = format!(" data-base=\"{}\"", html(&base));
    Ok(Html(document("Background tasks", &attrs, &body)))
}

/// The detail of every listed task, newest first (a task gone between the two reads, by
/// retention, is left out).
async fn details<T: TaskService>(
    st: &AppState<T>,
    scope: &Scope,
) -> Result<Vec<TaskDetailBody>, ApiError> {
    let list = list_tasks(st, scope, Some(PANEL_LIMIT)).await?;
    let mut details = Vec::with_capacity(list.tasks.len());
    for task in list.tasks {
        match task_detail(st, scope, &TaskId::from(task.task_id)).await {
            Ok(d) => details.push(d),
            Err(e) if e.status() == StatusCode::NOT_FOUND => {}
            Err(e) => return Err(e),
        }
    }
    Ok(details)
}

/// The `<main>` the script swaps in on a change: the badge and both sections.
fn panel(details: &[TaskDetailBody], scope: &Scope, base: &str, csrf: &str) -> String {
    let (active, recent): (Vec<_>, Vec<_>) = details.iter().partition(|d| is_active(d.status));
    let section = |id: &str, title: &str, tasks: &[&TaskDetailBody], empty: &str| {
        let items: String = tasks.iter().map(|d| render(d, base, csrf)).collect();
        let items = if items.is_empty() {
            format!("<p class=\"empty\">{empty}</p>")
        } else {
            items
        };
        format!("<section id=\"{id}\"><h2>{title}</h2>{items}</section>")
    };
    format!(
        "<main id=\"panel\"><header><h1>Background tasks \
         <span class=\"badge\" id=\"active-count\" data-count=\"{n}\">{n} active</span></h1>\
         <p class=\"thread\">Thread <code>{thread}</code></p></header>{a}{r}</main>\
         <footer><p id=\"live\" class=\"live\" aria-live=\"polite\">Updates when something \
         changes.</p></footer>",
        n = active.len(),
        thread = html(&scope.thread.0),
        a = section("active", "Active", &active, "Nothing running."),
        r = section("recent", "Recent", &recent, "Nothing finished yet."),
    )
}
