//! Legacy tasks (protocol 2025-11-25), which rmcp 3.11 cannot speak: a small JSON-RPC client
//! over streamable HTTP ([`rpc`]).
//!
//! Each task gets its own session: `initialize` (declaring the tasks capability) →
//! `Mcp-Session-Id` (kept, secret, in the task's driver data) → `notifications/initialized` →
//! a task-augmented `tools/call` (`params.task`). A task is visible only in the session that
//! created it, so a session per task keeps tasks independent; the sessions are left for the
//! server to expire (deleting one while core might still re-poll the task would turn a finished
//! task into a lost one).
//!
//! Later: `tasks/get` for the state; for a completed task, `tasks/result` (which blocks until
//! the task ends, so it is only called once `tasks/get` said completed, and within the request
//! timeout) for its result; `tasks/cancel`, whose "cannot cancel task in terminal status"
//! (-32602) is answered by reading the task's end with `tasks/get`.
//!
//! A server restart loses every session: the next request answers "no valid session", and the
//! task ends `failed` with a reason saying so — once, as any terminal state.
//!
//! input_required: the questions of a legacy task arrive only on the `tasks/result` stream,
//! which this driver does not hold open between polls. It reports the status with a fixed
//! text saying so; answering is not supported for this protocol.

mod rpc;
mod sse;

use crate::driver_data::{check_server_id, DriverData};
use crate::errors::{json_rpc, INVALID_PARAMS};
use crate::inline;
use crate::redact::Redactor;
use crate::report::{report, Payload, TaskFields};
use crate::server::Server;
use rpc::{call, RpcError, LEGACY_VERSION};
use serde_json::{json, Map, Value};
use tasklatch_core::ports::{DriverError, Submitted};
use tasklatch_core::secret::{RemoteHandle, Secret};
use tasklatch_core::snapshot::RemoteReport;

/// What a legacy `input_required` task reports (the questions themselves are not reachable).
pub const LEGACY_INPUT_REQUEST: &str = "The task asks for input. With the 2025-11-25 \
    tasks protocol its questions arrive only on the server's tasks/result stream, which \
    tasklatch does not hold open; answer it from a client connected to that server.";

/// What a task reports when the server lost its session.
pub const SESSION_LOST: &str = "session lost: the server no longer knows the session \
    this task was created in (it restarted or expired the session); the task cannot be \
    reached again";

/// One call in a task's session, its errors classified for `method`.
async fn request(
    server: &Server,
    session: &str,
    method: &str,
    params: Value,
    redactor: &Redactor,
) -> Result<Value, Lost> {
    match call(server, Some(session), method, params, false).await {
        Ok(reply) => Ok(reply.result),
        Err(RpcError::SessionLost) => Err(Lost::Session),
        Err(RpcError::Rpc { code, message }) => Err(Lost::Error(
            code,
            json_rpc(method, code, &message, redactor),
        )),
        Err(RpcError::Driver(e)) => Err(Lost::Error(0, e)),
    }
}

/// A failed call in a session.
enum Lost {
    /// The session is gone.
    Session,
    /// Any other failure (with its JSON-RPC code, or 0).
    Error(i64, DriverError),
}

/// Opens a session: `initialize` with the tasks capability, then `notifications/initialized`.
async fn open_session(server: &Server) -> Result<String, DriverError> {
    let params = json!({
        "protocolVersion": LEGACY_VERSION,
        "capabilities": {"tasks": {}},
        "clientInfo": {"name": "tasklatch", "version": env!("CARGO_PKG_VERSION")},
    });
    let reply = match call(server, None, "initialize", params, false).await {
        Ok(reply) => reply,
        Err(RpcError::Rpc { code, message }) => {
            return Err(json_rpc("initialize", code, &message, &server.redactor))
        }
        Err(RpcError::Driver(e)) => return Err(e),
        Err(RpcError::SessionLost) => return Err(DriverError::Malformed(SESSION_LOST.into())),
    };
    let session = reply.session.ok_or_else(|| {
        DriverError::Malformed(
            "initialize: the server opened no session (no Mcp-Session-Id)".into(),
        )
    })?;
    check_server_id("session id", &session)?;
    if !reply
        .result
        .pointer("/capabilities/tasks")
        .is_some_and(Value::is_object)
    {
        return Err(DriverError::Rejected(
            "the server does not offer tasks".into(),
        ));
    }
    let redactor = server.redactor.clone().with(&session);
    match call(
        server,
        Some(&session),
        "notifications/initialized",
        json!({}),
        true,
    )
    .await
    {
        Ok(_) => Ok(session),
        Err(RpcError::Driver(e)) => Err(e),
        Err(RpcError::Rpc { code, message }) => Err(json_rpc(
            "notifications/initialized",
            code,
            &message,
            &redactor,
        )),
        Err(RpcError::SessionLost) => Err(DriverError::Malformed(SESSION_LOST.into())),
    }
}

/// A new session, then a task-augmented `tools/call` in it.
pub(crate) async fn submit(
    server: &Server,
    tool: &str,
    arguments: Map<String, Value>,
) -> Result<Submitted, DriverError> {
    let session = open_session(server).await?;
    let redactor = server.redactor.clone().with(&session);
    let params = json!({"name": tool, "arguments": arguments, "task": {}});
    let result = match request(server, &session, "tools/call", params, &redactor).await {
        Ok(result) => result,
        Err(Lost::Session) => return Err(DriverError::Malformed(SESSION_LOST.into())),
        Err(Lost::Error(_, e)) => return Err(e),
    };
    let Some(task) = result.get("task") else {
        return Ok(inline::completed(&result, &redactor));
    };
    let fields = task_fields(task)?;
    check_server_id("task id", fields.task_id)?;
    let redactor = redactor.with(fields.task_id);
    let first = report(&fields, Payload::None, &redactor);
    Ok(Submitted {
        handle: RemoteHandle {
            remote_task_id: Secret::new(fields.task_id),
            driver_data: Secret::new(DriverData::Legacy { session }.encode()),
        },
        report: Some(first),
    })
}

/// `tasks/get` (and `tasks/result` for a completed task).
pub(crate) async fn get_status(
    server: &Server,
    remote_id: &str,
    session: &str,
) -> Result<RemoteReport, DriverError> {
    let redactor = server.redactor.clone().with(session).with(remote_id);
    let params = json!({"taskId": remote_id});
    let task = match request(server, session, "tasks/get", params.clone(), &redactor).await {
        Ok(task) => task,
        Err(Lost::Session) => return Ok(session_lost(remote_id)),
        Err(Lost::Error(_, e)) => return Err(e),
    };
    let fields = task_fields(&task)?;
    match fields.status {
        "completed" => {
            let result = match request(server, session, "tasks/result", params, &redactor).await {
                Ok(result) => result,
                Err(Lost::Session) => return Ok(session_lost(remote_id)),
                Err(Lost::Error(_, e)) => return Err(e),
            };
            let result = result.as_object().ok_or_else(|| {
                DriverError::Malformed("tasks/result: the result is not an object".into())
            })?;
            Ok(report(&fields, Payload::Result(result), &redactor))
        }
        "failed" => {
            let message = task
                .get("statusMessage")
                .cloned()
                .unwrap_or(json!("(no message)"));
            let error = Map::from_iter([("message".to_owned(), message)]);
            Ok(report(&fields, Payload::Error(&error), &redactor))
        }
        "input_required" => Ok(report(
            &fields,
            Payload::Questions(LEGACY_INPUT_REQUEST.into()),
            &redactor,
        )),
        _ => Ok(report(&fields, Payload::None, &redactor)),
    }
}

/// `tasks/cancel`; a task already terminal (-32602) is read with `tasks/get` instead.
pub(crate) async fn cancel(
    server: &Server,
    remote_id: &str,
    session: &str,
) -> Result<RemoteReport, DriverError> {
    let redactor = server.redactor.clone().with(session).with(remote_id);
    let params = json!({"taskId": remote_id});
    match request(server, session, "tasks/cancel", params, &redactor).await {
        Ok(task) => {
            let fields = task_fields(&task)?;
            Ok(report(&fields, Payload::None, &redactor))
        }
        Err(Lost::Session) => Ok(session_lost(remote_id)),
        Err(Lost::Error(INVALID_PARAMS, _)) => get_status(server, remote_id, session).await,
        Err(Lost::Error(_, e)) => Err(e),
    }
}

/// The terminal report of a task whose session is gone.
fn session_lost(remote_id: &str) -> RemoteReport {
    RemoteReport {
        task_id: remote_id.to_owned(),
        status: "failed".into(),
        error: Some(SESSION_LOST.into()),
        ..RemoteReport::default()
    }
}

/// A legacy task object's fields (`ttl` and `pollInterval` are milliseconds).
fn task_fields(task: &Value) -> Result<TaskFields<'_>, DriverError> {
    let text = |name: &str| task.get(name).and_then(Value::as_str);
    let (Some(task_id), Some(status)) = (text("taskId"), text("status")) else {
        return Err(DriverError::Malformed(
            "the task has no taskId or status text".into(),
        ));
    };
    Ok(TaskFields {
        task_id,
        status,
        created_at: text("createdAt"),
        last_updated_at: text("lastUpdatedAt"),
        ttl_ms: task.get("ttl").and_then(Value::as_f64),
        poll_interval_ms: task.get("pollInterval").and_then(Value::as_f64),
    })
}
