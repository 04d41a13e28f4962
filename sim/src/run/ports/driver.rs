//! The driver port: the remote server reached at the `mcp` host, every call recorded.

use super::caller::Caller;
use crate::history::{now_us, RemoteOp, Seen};
use crate::wire::mcp::{McpAnswer, McpRequest};
use crate::wire::rpc::{call, CallError};
use tasklatch_core::ids::ServerId;
use tasklatch_core::ports::{Driver, DriverError, SubmitRequest, Submitted};
use tasklatch_core::secret::{RemoteHandle, Secret};
use tasklatch_core::snapshot::RemoteReport;
use tasklatch_core::task::ErrorClass;

/// The remote server, reached at the `mcp` host.
pub struct RpcDriver {
    /// Who calls.
    pub caller: Caller,
}

fn transport(e: CallError) -> DriverError {
    match e {
        CallError::Timeout => DriverError::Unavailable {
            class: ErrorClass::Timeout,
            message: "remote call timed out".into(),
        },
        CallError::Connection(m) => DriverError::Unavailable {
            class: ErrorClass::Connection,
            message: m,
        },
        CallError::Decode(m) => DriverError::Malformed(m),
    }
}

impl RpcDriver {
    async fn call(
        &self,
        op: RemoteOp,
        remote_id: &str,
        req: McpRequest,
    ) -> Result<McpAnswer, DriverError> {
        let started_us = now_us();
        let answer = call::<_, McpAnswer>("mcp", &req, self.caller.ctx.timeouts.remote).await;
        self.caller.ctx.history.record_about(
            &self.caller.host(),
            remote_id,
            Seen::PortRemote {
                lane: self.caller.name.clone(),
                remote_id: remote_id.to_owned(),
                op,
                started_us,
                answered: answer.is_ok(),
            },
        );
        self.caller.after_call().await;
        answer.map_err(transport)
    }

    async fn report(
        &self,
        op: RemoteOp,
        handle: &RemoteHandle,
        req: McpRequest,
    ) -> Result<RemoteReport, DriverError> {
        match self.call(op, handle.remote_task_id.expose(), req).await? {
            McpAnswer::Report(r) => {
                let report = r.decode();
                if op == RemoteOp::Status {
                    self.caller.after_status(report.status != "working");
                }
                Ok(report)
            }
            McpAnswer::Unknown => Err(DriverError::UnknownTask),
            McpAnswer::Unavailable(m) => Err(DriverError::Unavailable {
                class: ErrorClass::Server,
                message: m,
            }),
            McpAnswer::Rejected(m) => Err(DriverError::Rejected(m)),
            McpAnswer::Created { .. } | McpAnswer::AnswerTaken => Err(DriverError::Malformed(
                "unexpected answer to a status call".into(),
            )),
        }
    }
}

impl Driver for RpcDriver {
    async fn submit(&self, req: &SubmitRequest) -> Result<Submitted, DriverError> {
        let mcp = McpRequest::Submit {
            owner: req.owner.to_string(),
            input: req.arguments.clone(),
        };
        match self.call(RemoteOp::Submit, "", mcp).await? {
            McpAnswer::Created {
                remote_id,
                driver_data,
                report,
            } => Ok(Submitted {
                handle: RemoteHandle {
                    remote_task_id: Secret::new(remote_id),
                    driver_data: Secret::new(driver_data),
                },
                report: Some(report.decode()),
            }),
            McpAnswer::Unavailable(m) => Err(DriverError::Unavailable {
                class: ErrorClass::Server,
                message: m,
            }),
            McpAnswer::Rejected(m) => Err(DriverError::Rejected(m)),
            McpAnswer::Unknown | McpAnswer::Report(_) | McpAnswer::AnswerTaken => {
                Err(DriverError::Malformed("unexpected answer to submit".into()))
            }
        }
    }

    async fn get_status(
        &self,
        _server: &ServerId,
        handle: &RemoteHandle,
    ) -> Result<RemoteReport, DriverError> {
        self.report(
            RemoteOp::Status,
            handle,
            McpRequest::Status {
                remote_id: handle.remote_task_id.expose().to_owned(),
            },
        )
        .await
    }

    async fn cancel(
        &self,
        _server: &ServerId,
        handle: &RemoteHandle,
    ) -> Result<RemoteReport, DriverError> {
        self.report(
            RemoteOp::Cancel,
            handle,
            McpRequest::Cancel {
                remote_id: handle.remote_task_id.expose().to_owned(),
            },
        )
        .await
    }

    async fn answer(
        &self,
        _server: &ServerId,
        handle: &RemoteHandle,
        request_id: &str,
        answer: &Secret,
    ) -> Result<(), DriverError> {
        let remote_id = handle.remote_task_id.expose();
        let req = McpRequest::Answer {
            remote_id: remote_id.to_owned(),
            request_id: request_id.to_owned(),
            text: answer.expose().to_owned(),
        };
        match self.call(RemoteOp::Answer, remote_id, req).await? {
            McpAnswer::AnswerTaken => {
                self.caller.after_answer().await;
                Ok(())
            }
            McpAnswer::Unknown => Err(DriverError::UnknownTask),
            McpAnswer::Unavailable(m) => Err(DriverError::Unavailable {
                class: ErrorClass::Server,
                message: m,
            }),
            McpAnswer::Rejected(m) => Err(DriverError::Rejected(m)),
            McpAnswer::Created { .. } | McpAnswer::Report(_) => Err(DriverError::Malformed(
                "unexpected answer to an answer".into(),
            )),
        }
    }
}
