//! The task calls: submit, list, detail, cancel by id and by name. Each one is scoped to the
//! authenticated owner and the thread in the path.

use super::auth::Caller;
use super::error::{ApiError, ErrorBody};
use super::shapes::{
    CancelByName, Cancelled, SubmitBody, Submitted, Task, TaskDetailBody, TaskList,
};
use super::threads::check_submit_thread;
use super::{AppState, TaskService};
use crate::config::{is_hidden_control, valid_id};
use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::Json;
use serde::Deserialize;
use tasklatch_core::engine::{SubmitCommand, SubmitError};
use tasklatch_core::ids::{ServerId, TaskId, ThreadId};
use tasklatch_core::policy::{DEFAULT_LIST, MAX_ID, MAX_LIST, MAX_NAME};
use tasklatch_core::store::{CancelOutcome, CancelTarget, Scope, StoreError};
use tasklatch_core::text::{neutralise, PublicTask, TaskDetail};
use utoipa::IntoParams;

/// Tasks listed when no limit is given.
const DEFAULT_LIMIT: usize = DEFAULT_LIST;
/// Tasks listed at most (the store's bound of one listing).
const MAX_LIMIT: usize = MAX_LIST;

/// The list's query.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// How many tasks, newest first (1 to 100, default 20).
    #[param(minimum = 1, maximum = 100)]
    limit: Option<usize>,
}

/// `/v1/threads/{thread}/tasks` as a scope, or `missing` when the thread cannot exist.
pub(crate) fn scope_of(
    caller: Caller,
    path: Result<Path<String>, PathRejection>,
    missing: fn() -> ApiError,
) -> Result<Scope, ApiError> {
    let Path(thread) = path?;
    if !valid_id(&thread) {
        return Err(missing());
    }
    Ok(Scope {
        owner: caller.0,
        thread: ThreadId::from(thread),
    })
}

/// `/v1/threads/{thread}/tasks/{task}` as a scope and a task id (404 if either cannot exist).
pub(crate) fn scoped_task(
    caller: Caller,
    path: Result<Path<(String, String)>, PathRejection>,
) -> Result<(Scope, TaskId), ApiError> {
    let Path((thread, task)) = path?;
    if !valid_id(&thread) || !valid_id(&task) {
        return Err(ApiError::not_found());
    }
    let scope = Scope {
        owner: caller.0,
        thread: ThreadId::from(thread),
    };
    Ok((scope, TaskId::from(task)))
}

fn invalid_thread() -> ApiError {
    ApiError::invalid(format!(
        "the thread id must be 1 to {MAX_ID} characters without control characters"
    ))
}

/// Submit a task.
#[utoipa::path(
    post,
    path = "/v1/threads/{thread}/tasks",
    tag = "tasks",
    params(("thread" = String, Path, description = "The conversation the task is bound to", min_length = 1, max_length = 200, pattern = r"^[^\u0000-\u001f\u007f-\u009f]+$")),
    request_body = SubmitBody,
    responses(
        (status = 201, description = "Started and persisted", body = Submitted, links(
            ("detail" = (operation_id = "detail", parameters(
                ("thread" = "$request.path.thread"), ("task" = "$response.body#/task_id")))),
            ("cancel" = (operation_id = "cancel_by_id", parameters(
                ("thread" = "$request.path.thread"), ("task" = "$response.body#/task_id")))),
            ("list" = (operation_id = "list", parameters(("thread" = "$request.path.thread"))))
        )),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 401, description = "Missing or unknown credentials", body = ErrorBody),
        (status = 404, description = "The thread is not one of the caller's (another owner's, missing, or an id the agent server cannot hold: never told apart); nothing was started", body = ErrorBody),
        (status = 409, description = "The server returned a task that is already tracked", body = ErrorBody),
        (status = 413, description = "Body too large", body = ErrorBody),
        (status = 415, description = "Not JSON", body = ErrorBody),
        (status = 422, description = "A field breaks a rule, or the server is unknown", body = ErrorBody),
        (status = 502, description = "The remote server did not accept the task", body = ErrorBody),
        (status = 503, description = "The agent server could not confirm the thread, or the task store did not answer before the start (nothing was started; submit again), or the task could not be saved (its remote task was cancelled again), or saving it was not confirmed: then it is saved once the store answers and reported in the thread, so do not submit it again", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn submit<T: TaskService>(
    State(st): State<AppState<T>>,
    caller: Caller,
    path: Result<Path<String>, PathRejection>,
    body: Result<Json<SubmitBody>, JsonRejection>,
) -> Result<(StatusCode, Json<Submitted>), ApiError> {
    let scope = scope_of(caller, path, invalid_thread)?;
    let Json(body) = body?;
    let submitted = submit_task(&st, scope, body).await?;
    Ok((StatusCode::CREATED, Json(submitted)))
}

/// The submit behind `POST /v1/threads/{thread}/tasks` and the agent tools: checks `body`,
/// then the thread's ownership ([`check_submit_thread`]: another owner's thread is "not
/// found" and nothing starts), then starts and persists the task (the engine's submit, run to
/// its end whatever happens to the caller). Errors are the API's answers.
pub(crate) async fn submit_task<T: TaskService>(
    st: &AppState<T>,
    scope: Scope,
    body: SubmitBody,
) -> Result<Submitted, ApiError> {
    let cmd = command(st, scope, body)?;
    check_submit_thread(st.threads.as_ref(), &cmd.scope).await?;
    let (server, tool) = (cmd.server.clone(), cmd.tool.clone());
    let id = detached_submit(st, cmd).await?;
    st.metrics.submitted();
    tracing::info!(task = %id, server = %server, tool = %tool, "task submitted");
    Ok(Submitted { task_id: id.0 })
}

/// Runs the engine's submit in a task of its own, so a client that disconnects (dropping the
/// request's future) cannot drop the submit midway: it runs to its end whatever happens to the
/// request — the handle recorded, or the remote task compensated — exactly as if the answer
/// had been read.
async fn detached_submit<T: TaskService>(
    st: &AppState<T>,
    cmd: SubmitCommand,
) -> Result<TaskId, ApiError> {
    let (tasks, ids) = (st.tasks.clone(), st.ids.clone());
    let work = tokio::spawn(async move { tasks.submit(ids.as_ref(), cmd).await });
    match work.await {
        Ok(outcome) => outcome.map_err(submit_error),
        Err(e) => {
            tracing::error!(error = %e, "a submit ended without an outcome");
            Err(ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "the submit ended unexpectedly and its outcome is unknown; list the thread's \
                 tasks before submitting it again",
            ))
        }
    }
}

/// The answer to a submit the engine refused. Store texts (constraint names, SQLSTATEs) stay
/// in the log; the caller gets a fixed message.
fn submit_error(e: SubmitError) -> ApiError {
    match e {
        // Every rule of the engine's own is checked before (`command`): what is left is the
        // store refusing the intent's data.
        SubmitError::Invalid(m) => {
            tracing::warn!(error = %m, "the task store refused a submit's data");
            ApiError::invalid(
                "the task could not be saved: a value breaks a limit of the task store; nothing \
                 was started",
            )
        }
        SubmitError::Remote(m) => ApiError::new(StatusCode::BAD_GATEWAY, neutralise(&m)),
        SubmitError::Duplicate => ApiError::new(StatusCode::CONFLICT, e.to_string()),
        SubmitError::NotStarted(_) => ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "the task was not started: the task store did not answer; submitting it again is safe",
        ),
        SubmitError::Store(StoreError::Invalid(_)) => ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "the task could not be saved: a value breaks a limit of the task store; the remote \
             task was cancelled",
        ),
        SubmitError::Store(_) => ApiError::unavailable(),
        // The store's own error text stays in the log, as for `Store`.
        SubmitError::Unconfirmed(_) => ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "the task was started but saving it was not confirmed; it is saved and reported in \
             this thread once the task store answers, so do not submit it again",
        ),
    }
}

fn command<T>(st: &AppState<T>, scope: Scope, body: SubmitBody) -> Result<SubmitCommand, ApiError> {
    if !st.servers.contains(&body.server) {
        return Err(ApiError::invalid(
            "unknown server: not one of the configured MCP servers",
        ));
    }
    for (field, text, max) in [("tool", &body.tool, MAX_ID), ("name", &body.name, MAX_NAME)] {
        if !shown_text(text, max) {
            return Err(ApiError::invalid(format!(
                "{field} must be 1 to {max} characters without control or bidirectional \
                 formatting characters"
            )));
        }
    }
    Ok(SubmitCommand {
        scope,
        server: ServerId::from(body.server),
        name: body.name,
        tool: body.tool,
        arguments: serde_json::Value::Object(body.arguments).to_string(),
    })
}

/// A submit's tool or task name as accepted: 1 to `max` characters, none of them
/// [`is_hidden_control`] (the pattern the submit body publishes for both).
fn shown_text(text: &str, max: usize) -> bool {
    let len = text.chars().count();
    (1..=max).contains(&len) && !text.chars().any(is_hidden_control)
}

/// List the caller's tasks in a thread, newest first.
#[utoipa::path(
    get,
    path = "/v1/threads/{thread}/tasks",
    tag = "tasks",
    params(("thread" = String, Path, description = "The conversation", min_length = 1, max_length = 200, pattern = r"^[^\u0000-\u001f\u007f-\u009f]+$"), ListQuery),
    responses(
        (status = 200, description = "At most `limit` tasks, newest first", body = TaskList),
        (status = 400, description = "Malformed query", body = ErrorBody),
        (status = 401, description = "Missing or unknown credentials", body = ErrorBody),
        (status = 404, description = "No such thread can exist", body = ErrorBody),
        (status = 422, description = "limit out of range", body = ErrorBody),
        (status = 503, description = "The task store is unavailable", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn list<T: TaskService>(
    State(st): State<AppState<T>>,
    caller: Caller,
    path: Result<Path<String>, PathRejection>,
    query: Result<Query<ListQuery>, QueryRejection>,
) -> Result<Json<TaskList>, ApiError> {
    let scope = scope_of(caller, path, ApiError::not_found)?;
    let Query(query) = query?;
    list_tasks(&st, &scope, query.limit).await.map(Json)
}

/// The listing behind `GET /v1/threads/{thread}/tasks` and the agent tools: the scope's
/// tasks, newest first, at most `limit` (default 20; outside 1 to 100 is 422), each as its 7
/// public fields.
pub(crate) async fn list_tasks<T: TaskService>(
    st: &AppState<T>,
    scope: &Scope,
    limit: Option<usize>,
) -> Result<TaskList, ApiError> {
    let limit = limit.unwrap_or(DEFAULT_LIMIT);
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(ApiError::invalid(format!("limit must be 1 to {MAX_LIMIT}")));
    }
    let rows = st
        .tasks
        .rows(scope, limit)
        .await
        .map_err(|_| ApiError::unavailable())?;
    let tasks = rows
        .iter()
        .map(|r| Task::from(PublicTask::from_row(r)))
        .collect();
    Ok(TaskList { tasks })
}

/// One task's detail.
#[utoipa::path(
    get,
    path = "/v1/threads/{thread}/tasks/{task}",
    tag = "tasks",
    params(
        ("thread" = String, Path, description = "The conversation", min_length = 1, max_length = 200, pattern = r"^[^\u0000-\u001f\u007f-\u009f]+$"),
        ("task" = String, Path, description = "The task's id", min_length = 1, max_length = 200, pattern = r"^[^\u0000-\u001f\u007f-\u009f]+$"),
    ),
    responses(
        (status = 200, description = "The task", body = TaskDetailBody),
        (status = 400, description = "Malformed path", body = ErrorBody),
        (status = 401, description = "Missing or unknown credentials", body = ErrorBody),
        (status = 404, description = "No such task in the caller's scope", body = ErrorBody),
        (status = 503, description = "The task store is unavailable", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn detail<T: TaskService>(
    State(st): State<AppState<T>>,
    caller: Caller,
    path: Result<Path<(String, String)>, PathRejection>,
) -> Result<Json<TaskDetailBody>, ApiError> {
    let (scope, id) = scoped_task(caller, path)?;
    task_detail(&st, &scope, &id).await.map(Json)
}

/// The detail behind `GET /v1/threads/{thread}/tasks/{task}` and the agent tools: the
/// whitelisted detail of one task of the scope; any other task is "not found".
pub(crate) async fn task_detail<T: TaskService>(
    st: &AppState<T>,
    scope: &Scope,
    id: &TaskId,
) -> Result<TaskDetailBody, ApiError> {
    let row = st
        .tasks
        .row(scope, id)
        .await
        .map_err(|_| ApiError::unavailable())?;
    let row = row.ok_or_else(ApiError::not_found)?;
    Ok(TaskDetail::from_row(&row).into())
}

/// Cancel a task by id.
#[utoipa::path(
    post,
    path = "/v1/threads/{thread}/tasks/{task}/cancel",
    tag = "tasks",
    params(
        ("thread" = String, Path, description = "The conversation", min_length = 1, max_length = 200, pattern = r"^[^\u0000-\u001f\u007f-\u009f]+$"),
        ("task" = String, Path, description = "The task's id", min_length = 1, max_length = 200, pattern = r"^[^\u0000-\u001f\u007f-\u009f]+$"),
    ),
    responses(
        (status = 200, description = "What the request did", body = Cancelled),
        (status = 400, description = "Malformed path", body = ErrorBody),
        (status = 401, description = "Missing or unknown credentials", body = ErrorBody),
        (status = 404, description = "No such task in the caller's scope", body = ErrorBody),
        (status = 503, description = "The task store is unavailable", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn cancel_by_id<T: TaskService>(
    State(st): State<AppState<T>>,
    caller: Caller,
    path: Result<Path<(String, String)>, PathRejection>,
) -> Result<Json<Cancelled>, ApiError> {
    let (scope, id) = scoped_task(caller, path)?;
    cancel(&st, &scope, &CancelTarget::Id(id)).await.map(Json)
}

/// Cancel the caller's active task with this name in the thread.
#[utoipa::path(
    post,
    path = "/v1/threads/{thread}/cancel",
    tag = "tasks",
    params(("thread" = String, Path, description = "The conversation", min_length = 1, max_length = 200, pattern = r"^[^\u0000-\u001f\u007f-\u009f]+$")),
    request_body = CancelByName,
    responses(
        (status = 200, description = "What the request did", body = Cancelled),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 401, description = "Missing or unknown credentials", body = ErrorBody),
        (status = 404, description = "No active task of that name in the caller's scope", body = ErrorBody),
        (status = 409, description = "Several active tasks have that name; cancel by id", body = ErrorBody),
        (status = 413, description = "Body too large", body = ErrorBody),
        (status = 415, description = "Not JSON", body = ErrorBody),
        (status = 422, description = "Wrong shape", body = ErrorBody),
        (status = 503, description = "The task store is unavailable", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn cancel_by_name<T: TaskService>(
    State(st): State<AppState<T>>,
    caller: Caller,
    path: Result<Path<String>, PathRejection>,
    body: Result<Json<CancelByName>, JsonRejection>,
) -> Result<Json<Cancelled>, ApiError> {
    let scope = scope_of(caller, path, ApiError::not_found)?;
    let Json(body) = body?;
    cancel(&st, &scope, &name_target(body.name)?)
        .await
        .map(Json)
}

/// A cancel by `name`: a name no task can have is "not found" at once.
pub(crate) fn name_target(name: String) -> Result<CancelTarget, ApiError> {
    if name.is_empty() || name.chars().count() > MAX_NAME || name.contains('\0') {
        return Err(ApiError::not_found());
    }
    Ok(CancelTarget::Name(name))
}

/// The cancel behind both cancel calls and the agent tools: records the request for the
/// scope's task `target` names; not found (another owner's or thread's task included) is
/// 404, a name several active tasks share is 409.
pub(crate) async fn cancel<T: TaskService>(
    st: &AppState<T>,
    scope: &Scope,
    target: &CancelTarget,
) -> Result<Cancelled, ApiError> {
    let outcome = st
        .tasks
        .cancel(scope, target)
        .await
        .map_err(|_| ApiError::unavailable())?;
    if let CancelOutcome::Ambiguous(n) = outcome {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            format!("{n} active tasks have that name; cancel by id"),
        ));
    }
    Cancelled::of(outcome).ok_or_else(ApiError::not_found)
}
