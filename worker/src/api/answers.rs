//! The answer call: the user's answer to a question of an `input_required` task, scoped to the
//! authenticated owner and the thread in the path. The answer is recorded (never logged, never
//! shown again) and the worker's poll loop sends it at most once.

use super::auth::Caller;
use super::error::{ApiError, ErrorBody};
use super::shapes::{AnswerBody, AnswerResult, Answered};
use super::tasks::scoped_task;
use super::{AppState, TaskService};
use axum::extract::rejection::{JsonRejection, PathRejection};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use tasklatch_core::ids::TaskId;
use tasklatch_core::policy::MAX_ANSWER_BYTES;
use tasklatch_core::secret::Secret;
use tasklatch_core::store::{AnswerOutcome, AnswerRequest, Scope, StoreError};
use tasklatch_core::transitions::answer::valid_request_id;

/// Answer a question of an `input_required` task.
#[utoipa::path(
    post,
    path = "/v1/threads/{thread}/tasks/{task}/answer",
    tag = "tasks",
    params(
        ("thread" = String, Path, description = "The conversation", min_length = 1, max_length = 200, pattern = r"^[^\u0000-\u001f\u007f-\u009f]+$"),
        ("task" = String, Path, description = "The task's id", min_length = 1, max_length = 200, pattern = r"^[^\u0000-\u001f\u007f-\u009f]+$"),
    ),
    request_body = AnswerBody,
    responses(
        (status = 200, description = "Recorded; sent with the task's next poll, at most once", body = Answered),
        (status = 400, description = "Malformed JSON or path", body = ErrorBody),
        (status = 401, description = "Missing or unknown credentials", body = ErrorBody),
        (status = 404, description = "No such task in the caller's scope", body = ErrorBody),
        (status = 409, description = "This question was already answered, or another answer waits to be sent", body = ErrorBody),
        (status = 413, description = "Body too large", body = ErrorBody),
        (status = 415, description = "Not JSON", body = ErrorBody),
        (status = 422, description = "Wrong shape, answer too large, or the task does not ask this question now", body = ErrorBody),
        (status = 503, description = "The task store is unavailable", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn answer<T: TaskService>(
    State(st): State<AppState<T>>,
    caller: Caller,
    path: Result<Path<(String, String)>, PathRejection>,
    body: Result<Json<AnswerBody>, JsonRejection>,
) -> Result<Json<Answered>, ApiError> {
    let (scope, id) = scoped_task(caller, path)?;
    let Json(body) = body?;
    answer_task(&st, &scope, id, body).await.map(Json)
}

/// The answer behind `POST /v1/threads/{thread}/tasks/{task}/answer` and the agent tools:
/// checks `body`, then records it for the scope's task `id` (never logged, never shown
/// again). Another owner's or thread's task is "not found"; an answered question or one
/// another answer waits before is 409; a question the task does not ask now is 422.
pub(crate) async fn answer_task<T: TaskService>(
    st: &AppState<T>,
    scope: &Scope,
    id: TaskId,
    body: AnswerBody,
) -> Result<Answered, ApiError> {
    if !valid_request_id(&body.request_id) {
        return Err(ApiError::invalid(
            "request_id must be 1 to 64 characters of A-Z, a-z, 0-9, _ and -",
        ));
    }
    let text = serde_json::Value::Object(body.answer).to_string();
    if text.len() > MAX_ANSWER_BYTES {
        return Err(ApiError::invalid(format!(
            "the answer must be at most {MAX_ANSWER_BYTES} bytes as JSON"
        )));
    }
    let req = AnswerRequest {
        task_id: id,
        request_id: body.request_id,
        text: Secret::new(text),
    };
    let outcome = st.tasks.answer(scope, req).await.map_err(|e| match e {
        // Every rule of ours is checked above; the store's text (constraint names, SQLSTATEs)
        // stays in the log.
        StoreError::Invalid(m) => {
            tracing::warn!(thread = %scope.thread, error = %m, "the task store refused an answer");
            ApiError::invalid(
                "the answer could not be recorded: it breaks a limit of the task store",
            )
        }
        _ => ApiError::unavailable(),
    })?;
    match outcome {
        AnswerOutcome::Recorded(task) => {
            tracing::info!(task = %task, "answer recorded");
            Ok(Answered {
                task_id: task.0,
                result: AnswerResult::Recorded,
            })
        }
        AnswerOutcome::AlreadyAnswered(_) => Err(ApiError::new(
            StatusCode::CONFLICT,
            "this question was already answered",
        )),
        AnswerOutcome::AnotherPending(_) => Err(ApiError::new(
            StatusCode::CONFLICT,
            "another answer of this task waits to be sent; try again after it is sent",
        )),
        AnswerOutcome::NotAsked(_) => {
            Err(ApiError::invalid("the task does not ask this question now"))
        }
        AnswerOutcome::NotFound => Err(ApiError::not_found()),
    }
}
