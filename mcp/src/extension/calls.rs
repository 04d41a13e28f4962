//! The four requests of the tasks extension, each mapped to core's shapes.

use super::errors::service_error;
use super::{Conn, ConnectError, Connections};
use crate::driver_data::{check_server_id, DriverData};
use crate::errors::{timed_out, unavailable};
use crate::inline;
use crate::questions;
use crate::redact::Redactor;
use crate::report::{report, Payload, TaskFields};
use crate::server::Server;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, DetailedTask, GetTaskParams,
    JsonObject, Task, TaskPayload, UpdateTaskParams,
};
use rmcp::service::ServiceError;
use serde_json::Value;
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use tasklatch_core::ports::{DriverError, Submitted};
use tasklatch_core::secret::{RemoteHandle, Secret};
use tasklatch_core::snapshot::RemoteReport;
use tasklatch_core::task::ErrorClass;

/// Runs one request on the server's client within the request timeout; a closed transport
/// drops the client so the next call opens a new one.
async fn request<T, F, Fut>(
    conns: &Connections,
    server: &Server,
    conn: &Arc<Conn>,
    method: &str,
    redactor: &Redactor,
    call: F,
) -> Result<T, DriverError>
where
    F: FnOnce(Arc<Conn>) -> Fut,
    Fut: Future<Output = Result<T, ServiceError>>,
{
    match tokio::time::timeout(server.timeout(), call(conn.clone())).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(e)) => {
            if matches!(e, ServiceError::TransportClosed) {
                conns.drop_client(server).await;
            }
            Err(service_error(method, e, server, redactor))
        }
        Err(_) => Err(timed_out(server.timeout())),
    }
}

/// The server's client for a task created with the extension. Any failure to connect is
/// `Unavailable` (core retries with backoff and degrades tracking): a server that answered the
/// task's creation with the extension may be mid-deploy, behind a proxy's error page or
/// briefly broken, and a connect failure says nothing about the task, so it never ends one.
async fn client(conns: &Connections, server: &Server) -> Result<Arc<Conn>, DriverError> {
    match conns.get(server).await {
        Ok(conn) => Ok(conn),
        Err(ConnectError::Failed(e)) => Err(transient(e)),
        Err(ConnectError::NotExtension) => Err(unavailable(
            ErrorClass::Server,
            "server/discover: the server did not answer as a tasks-extension server (transient \
             until it speaks the extension again)",
        )),
    }
}

/// `e` as a transient failure: a connect-time `Malformed` or `Rejected` keeps its text.
fn transient(e: DriverError) -> DriverError {
    match e {
        DriverError::Malformed(m) | DriverError::Rejected(m) => {
            unavailable(ErrorClass::Server, format!("server/discover: {m}"))
        }
        other => other,
    }
}

/// `tools/call`: a task (the handle, its first state) or an inline answer (a task born
/// completed). `Err(None)` when the server does not speak the extension (for `auto`).
pub(crate) async fn submit(
    conns: &Connections,
    server: &Server,
    tool: &str,
    arguments: JsonObject,
) -> Result<Submitted, Option<DriverError>> {
    let conn = match conns.get(server).await {
        Ok(conn) => conn,
        Err(ConnectError::NotExtension) => return Err(None),
        Err(ConnectError::Failed(e)) => return Err(Some(e)),
    };
    let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
    let redactor = server.redactor.clone();
    let answer = request(
        conns,
        server,
        &conn,
        "tools/call",
        &redactor,
        |c| async move { c.peer().call_tool_once(params).await },
    )
    .await?;
    match answer {
        CallToolResponse::Task(created) => {
            let task = created.task;
            check_server_id("task id", &task.task_id)?;
            let redactor = redactor.with(&task.task_id);
            let report = report(
                &fields(&task, &status_text(&task)),
                Payload::None,
                &redactor,
            );
            Ok(Submitted {
                handle: RemoteHandle {
                    remote_task_id: Secret::new(task.task_id),
                    driver_data: Secret::new(DriverData::Extension.encode()),
                },
                report: Some(report),
            })
        }
        CallToolResponse::Complete(result) => {
            let result = serde_json::to_value(&result).unwrap_or(Value::Null);
            Ok(inline::completed(&result, &redactor))
        }
        CallToolResponse::InputRequired(_) => Err(Some(DriverError::Rejected(
            "the server asked for input before starting a task; multi-round-trip tool calls \
             are not supported"
                .into(),
        ))),
        _ => Err(Some(DriverError::Malformed(
            "tools/call: an answer of a kind this driver does not know".into(),
        ))),
    }
}

/// `tasks/get`, mapped by [`crate::report`].
pub(crate) async fn get_status(
    conns: &Connections,
    server: &Server,
    remote_id: &str,
) -> Result<RemoteReport, DriverError> {
    let detailed = get(conns, server, remote_id).await?;
    let redactor = server.redactor.clone().with(remote_id);
    Ok(map_detailed(&detailed, &redactor))
}

async fn get(
    conns: &Connections,
    server: &Server,
    remote_id: &str,
) -> Result<DetailedTask, DriverError> {
    let conn = client(conns, server).await?;
    let redactor = server.redactor.clone().with(remote_id);
    let params = GetTaskParams::new(remote_id.to_owned());
    let got = request(
        conns,
        server,
        &conn,
        "tasks/get",
        &redactor,
        |c| async move { c.peer().get_task(params).await },
    )
    .await?;
    Ok(got.task)
}

/// `tasks/cancel` (an acknowledgement only), then `tasks/get` for the state it left.
pub(crate) async fn cancel(
    conns: &Connections,
    server: &Server,
    remote_id: &str,
) -> Result<RemoteReport, DriverError> {
    let conn = client(conns, server).await?;
    let redactor = server.redactor.clone().with(remote_id);
    let params = CancelTaskParams::new(remote_id.to_owned());
    request(
        conns,
        server,
        &conn,
        "tasks/cancel",
        &redactor,
        |c| async move { c.peer().cancel_task(params).await },
    )
    .await?;
    get_status(conns, server, remote_id).await
}

/// `tasks/update` with `response` for the question whose public id is `question_id`, after
/// checking on a fresh `tasks/get` that the task asks it now (a wrong key would be ignored
/// silently by the server).
pub(crate) async fn answer(
    conns: &Connections,
    server: &Server,
    remote_id: &str,
    question_id: &str,
    response: &Value,
) -> Result<(), DriverError> {
    let detailed = get(conns, server, remote_id).await?;
    let TaskPayload::InputRequired { input_requests } = &detailed.payload else {
        return Err(DriverError::Rejected(
            "the task does not ask for input now".into(),
        ));
    };
    let key = input_requests
        .keys()
        .find(|key| questions::question_id(key) == question_id)
        .ok_or_else(|| DriverError::Rejected("the task does not ask this question".into()))?;
    let responses = BTreeMap::from([(key.clone(), response.clone())]);
    let conn = client(conns, server).await?;
    let redactor = server.redactor.clone().with(remote_id);
    let params = UpdateTaskParams::new(remote_id.to_owned(), responses);
    request(
        conns,
        server,
        &conn,
        "tasks/update",
        &redactor,
        |c| async move { c.peer().update_task(params).await },
    )
    .await
}

fn map_detailed(detailed: &DetailedTask, redactor: &Redactor) -> RemoteReport {
    let status = status_text(&detailed.task);
    let fields = fields(&detailed.task, &status);
    match &detailed.payload {
        TaskPayload::InputRequired { input_requests } => {
            let requests: BTreeMap<String, Value> = input_requests
                .iter()
                .map(|(k, r)| (k.clone(), serde_json::to_value(r).unwrap_or(Value::Null)))
                .collect();
            let text = questions::render(&requests, redactor);
            report(&fields, Payload::Questions(text), redactor)
        }
        TaskPayload::Completed { result } => report(&fields, Payload::Result(result), redactor),
        TaskPayload::Failed { error } => report(&fields, Payload::Error(error), redactor),
        _ => report(&fields, Payload::None, redactor),
    }
}

fn fields<'a>(task: &'a Task, status: &'a str) -> TaskFields<'a> {
    TaskFields {
        task_id: &task.task_id,
        status,
        created_at: Some(&task.created_at),
        last_updated_at: Some(&task.last_updated_at),
        ttl_ms: task.ttl_ms.map(|ms| ms as f64),
        poll_interval_ms: task.poll_interval_ms.map(|ms| ms as f64),
    }
}

/// The status as the wire spells it.
fn status_text(task: &Task) -> String {
    match serde_json::to_value(task.status) {
        Ok(Value::String(s)) => s,
        _ => String::new(),
    }
}
