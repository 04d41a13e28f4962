//! What each tool does: its arguments checked, then the very call the HTTP API makes for the
//! same request (`crate::api`'s submit, list, detail, cancel and answer, with their guards and
//! their errors), its answer written as the API's public JSON body.

use super::tools::{AnswerArgs, CancelArgs, GetArgs, ListArgs, StartArgs, ToolName};
use crate::api::shapes::{AnswerBody, SubmitBody};
use crate::api::{answers, tasks, ApiError, AppState, TaskService};
use crate::config::valid_id;
use axum::http::StatusCode;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};
use tasklatch_core::ids::TaskId;
use tasklatch_core::policy::MAX_LIST;
use tasklatch_core::store::{CancelTarget, Scope};
use tasklatch_core::text::neutralise;

/// Runs `tool` with `args` in `scope`: the answer's JSON text, or the API's error.
pub async fn call<T: TaskService>(
    st: &AppState<T>,
    scope: Scope,
    tool: ToolName,
    args: Map<String, Value>,
) -> Result<String, ApiError> {
    match tool {
        ToolName::List => {
            let a: ListArgs = parse(args)?;
            json(&tasks::list_tasks(st, &scope, a.limit).await?)
        }
        ToolName::Get => {
            let a: GetArgs = parse(args)?;
            json(&tasks::task_detail(st, &scope, &task_id(a.task_id)?).await?)
        }
        ToolName::Cancel => {
            let target = cancel_target(st, &scope, parse(args)?).await?;
            json(&tasks::cancel(st, &scope, &target).await?)
        }
        ToolName::Answer => {
            let a: AnswerArgs = parse(args)?;
            let body = AnswerBody {
                request_id: a.request_id,
                answer: a.answer,
            };
            json(&answers::answer_task(st, &scope, task_id(a.task_id)?, body).await?)
        }
        ToolName::Start => {
            let a: StartArgs = parse(args)?;
            let body = SubmitBody {
                server: a.server,
                tool: a.tool,
                arguments: a.arguments,
                name: a.name,
            };
            json(&tasks::submit_task(st, scope, body).await?)
        }
    }
}

/// The task a cancel names: by id, by exact name, or — neither given — the one task of the
/// scope that is not terminal (the store's "active", as for a cancel by name). No active task
/// is 404, several are 409; so is a thread whose listing reaches its bound (an active task
/// could hide past it), rather than a guess.
async fn cancel_target<T: TaskService>(
    st: &AppState<T>,
    scope: &Scope,
    args: CancelArgs,
) -> Result<CancelTarget, ApiError> {
    match (args.task_id, args.name) {
        (Some(id), None) => Ok(CancelTarget::Id(task_id(id)?)),
        (None, Some(name)) => tasks::name_target(name),
        (Some(_), Some(_)) => Err(ApiError::invalid("give task_id or name, not both")),
        (None, None) => {
            let rows = st
                .tasks
                .rows(scope, MAX_LIST)
                .await
                .map_err(|_| ApiError::unavailable())?;
            let active: Vec<_> = rows
                .iter()
                .filter(|r| !r.remote.status.is_terminal())
                .collect();
            match active.as_slice() {
                [one] if rows.len() < MAX_LIST => Ok(CancelTarget::Id(one.id().clone())),
                [] if rows.len() < MAX_LIST => Err(ApiError::new(
                    StatusCode::NOT_FOUND,
                    "no task of this conversation is running",
                )),
                _ => Err(ApiError::new(
                    StatusCode::CONFLICT,
                    "more than one task of this conversation may be running; name one by \
                     task_id or name",
                )),
            }
        }
    }
}

/// A task id as given: one no task can have is "not found", like the API's path.
fn task_id(id: String) -> Result<TaskId, ApiError> {
    if valid_id(&id) {
        Ok(TaskId::from(id))
    } else {
        Err(ApiError::not_found())
    }
}

/// The tool's arguments as `A`; a mismatch is 422 with serde's reason (neutralised: it may
/// quote what the model wrote).
fn parse<A: DeserializeOwned>(args: Map<String, Value>) -> Result<A, ApiError> {
    serde_json::from_value(Value::Object(args)).map_err(|e| {
        ApiError::invalid(format!(
            "the arguments do not fit the tool's input schema: {}",
            neutralise(&e.to_string())
        ))
    })
}

/// `body` as JSON text.
fn json<B: Serialize>(body: &B) -> Result<String, ApiError> {
    serde_json::to_string(body).map_err(|_| {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "the answer could not be written; try again",
        )
    })
}
