//! The engine's ports inside the simulation: the store, the remote server and the launcher
//! reached over simulated TCP, and a clock that may be skewed.
//!
//! Each client records at its port what the engine asked and got back (the Jepsen client
//! view) and injects the plan's pauses: a paused lane stalls when a call returns, before the
//! engine sees the answer — the moment a real process pause would hurt most.

use crate::ctx::{now_ms, timestamp, Ctx};
use crate::db_wire::{Envelope, StoreRequest, StoreResponse};
use crate::gateway_wire::{GatewayRequest, GatewayResponse};
use crate::history::{now_us, Event, RemoteOp};
use crate::mcp_wire::{McpAnswer, McpRequest};
use crate::plan::FaultKind;
use crate::wire::{call, CallError};
use std::sync::Arc;
use std::time::Duration;
use tasklatch_core::ids::{RunId, ServerId, TaskId, ThreadId};
use tasklatch_core::lease::LeaseKind;
use tasklatch_core::ports::*;
use tasklatch_core::secret::{RemoteHandle, Secret};
use tasklatch_core::snapshot::RemoteReport;
use tasklatch_core::store::*;
use tasklatch_core::task::{ErrorClass, TaskRow};
use tasklatch_core::time::Timestamp;

/// Who is calling: a worker lane or the user host.
#[derive(Clone)]
pub struct Caller {
    /// `worker-{w}/{lane}` or `user`.
    pub name: String,
    /// The run's shared context.
    pub ctx: Arc<Ctx>,
    /// Worker and lane, for worker callers.
    pub lane: Option<(u32, u32)>,
}

impl Caller {
    /// The host part of the caller's name.
    pub fn host(&self) -> String {
        self.name.split('/').next().unwrap_or(&self.name).to_owned()
    }

    /// Stalls the lane if a pause of the plan is due now (each pause happens once). Called when
    /// a remote or launcher call returns — the lane then holds a lease, and a pause there is the
    /// classic stale-writer hazard that fencing tokens must stop.
    async fn after_call(&self) {
        let Some((worker, lane)) = self.lane else {
            return;
        };
        let t = now_ms();
        let due: Vec<(usize, u64)> = self
            .ctx
            .active(t, |k| match k {
                FaultKind::Pause { worker: w, lane: l } if *w == worker && *l == lane => Some(()),
                _ => None,
            })
            .map(|(i, ())| (i, self.ctx.faults()[i].for_ms))
            .collect();
        for (index, for_ms) in due {
            if self.ctx.fire(index, &self.host()) {
                tokio::time::sleep(Duration::from_millis(for_ms)).await;
            }
        }
    }
}

/// A clock at simulated time plus the worker's active skew.
pub struct SimClock {
    /// The run's shared context.
    pub ctx: Arc<Ctx>,
    /// The worker whose skew applies.
    pub worker: Option<u32>,
}

impl Clock for SimClock {
    fn now(&self) -> Timestamp {
        let elapsed = turmoil::sim_elapsed().unwrap_or_default();
        let t = elapsed.as_millis() as u64;
        let mut skew = 0;
        if let Some(worker) = self.worker {
            for (index, s) in self.ctx.active(t, |k| match k {
                FaultKind::Skew { worker: w, skew_ms } if *w == worker => Some(*skew_ms),
                _ => None,
            }) {
                self.ctx.fire(index, &format!("worker-{worker}"));
                skew += s;
            }
        }
        timestamp(elapsed, skew)
    }
}

/// The store, reached at the `db` host.
pub struct RpcStore {
    /// Who calls.
    pub caller: Caller,
}

impl RpcStore {
    async fn call(&self, body: StoreRequest) -> Result<StoreResponse, StoreError> {
        let env = Envelope {
            caller: self.caller.name.clone(),
            body,
        };
        let answer = call::<_, StoreResponse>("db", &env, self.caller.ctx.timeouts.store).await;
        answer.map_err(|e| StoreError::Unavailable(e.to_string()))
    }
}

fn mismatch<T>() -> Result<T, StoreError> {
    Err(StoreError::Unavailable(
        "unexpected answer from the store".into(),
    ))
}

impl Store for RpcStore {
    async fn insert_task(&self, row: TaskRow) -> Result<(), StoreError> {
        match self.call(StoreRequest::Insert(Box::new(row))).await? {
            StoreResponse::Unit(r) => r,
            _ => mismatch(),
        }
    }

    async fn claim(&self, kind: LeaseKind, req: ClaimRequest) -> Result<Vec<Claimed>, StoreError> {
        match self.call(StoreRequest::Claim(kind, req)).await? {
            StoreResponse::Claimed(r) => r,
            _ => mismatch(),
        }
    }

    async fn apply_polls(
        &self,
        writes: Vec<PollWrite>,
        now: Timestamp,
    ) -> Result<Vec<WriteOutcome>, StoreError> {
        match self.call(StoreRequest::ApplyPolls(writes, now)).await? {
            StoreResponse::Outcomes(r) => r,
            _ => mismatch(),
        }
    }

    async fn finish_notifications(
        &self,
        writes: Vec<NotifyWrite>,
        now: Timestamp,
    ) -> Result<Vec<WriteOutcome>, StoreError> {
        match self
            .call(StoreRequest::FinishNotifications(writes, now))
            .await?
        {
            StoreResponse::Outcomes(r) => r,
            _ => mismatch(),
        }
    }

    async fn finish_cancels(
        &self,
        writes: Vec<CancelWrite>,
        now: Timestamp,
    ) -> Result<Vec<WriteOutcome>, StoreError> {
        match self.call(StoreRequest::FinishCancels(writes, now)).await? {
            StoreResponse::Outcomes(r) => r,
            _ => mismatch(),
        }
    }

    async fn release(
        &self,
        kind: LeaseKind,
        releases: Vec<Release>,
        now: Timestamp,
    ) -> Result<Vec<WriteOutcome>, StoreError> {
        match self
            .call(StoreRequest::Release(kind, releases, now))
            .await?
        {
            StoreResponse::Outcomes(r) => r,
            _ => mismatch(),
        }
    }

    async fn request_cancel(
        &self,
        scope: &Scope,
        target: &CancelTarget,
        now: Timestamp,
    ) -> Result<CancelOutcome, StoreError> {
        match self
            .call(StoreRequest::RequestCancel(
                scope.clone(),
                target.clone(),
                now,
            ))
            .await?
        {
            StoreResponse::Cancel(r) => r,
            _ => mismatch(),
        }
    }

    async fn list_tasks(&self, scope: &Scope) -> Result<Vec<TaskRow>, StoreError> {
        match self.call(StoreRequest::List(scope.clone())).await? {
            StoreResponse::Rows(r) => r,
            _ => mismatch(),
        }
    }

    async fn get_task(&self, scope: &Scope, id: &TaskId) -> Result<Option<TaskRow>, StoreError> {
        match self
            .call(StoreRequest::Get(scope.clone(), id.clone()))
            .await?
        {
            StoreResponse::Row(r) => r.map(|row| row.map(|b| *b)),
            _ => mismatch(),
        }
    }

    async fn admin_rows(
        &self,
        after: Option<TaskId>,
        limit: usize,
    ) -> Result<Vec<TaskRow>, StoreError> {
        match self.call(StoreRequest::AdminRows(after, limit)).await? {
            StoreResponse::Rows(r) => r,
            _ => mismatch(),
        }
    }

    async fn overview(&self) -> Result<Overview, StoreError> {
        match self.call(StoreRequest::Overview).await? {
            StoreResponse::Overview(r) => r,
            _ => mismatch(),
        }
    }
}

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
            Event::PortRemote {
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
            McpAnswer::Report(r) => Ok(r.decode()),
            McpAnswer::Unknown => Err(DriverError::UnknownTask),
            McpAnswer::Unavailable(m) => Err(DriverError::Unavailable {
                class: ErrorClass::Server,
                message: m,
            }),
            McpAnswer::Rejected(m) => Err(DriverError::Rejected(m)),
            McpAnswer::Created { .. } => {
                Err(DriverError::Malformed("unexpected creation answer".into()))
            }
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
            McpAnswer::Unknown | McpAnswer::Report(_) => {
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
}

/// The launcher, reached at the `gateway` host.
pub struct RpcLauncher {
    /// Who calls.
    pub caller: Caller,
}

impl RpcLauncher {
    /// Sends one gateway request with the launcher deadline.
    pub async fn call(&self, req: GatewayRequest) -> Result<GatewayResponse, CallError> {
        call::<_, GatewayResponse>("gateway", &req, self.caller.ctx.timeouts.launcher).await
    }
}

impl Launcher for RpcLauncher {
    async fn start_run(&self, req: RunRequest) -> LaunchOutcome {
        let key = req.key.clone();
        let outcome = match self.call(GatewayRequest::Launch(req)).await {
            Ok(GatewayResponse::Launch(o)) => o,
            Ok(_) => LaunchOutcome::Failed("unexpected answer from the launcher".into()),
            Err(e) => LaunchOutcome::Failed(format!("launcher unreachable: {e}")),
        };
        let text = match &outcome {
            LaunchOutcome::Started(run) => format!("started:{run}"),
            LaunchOutcome::Busy => "busy".into(),
            LaunchOutcome::ThreadGone => "gone".into(),
            LaunchOutcome::Failed(_) => "failed".into(),
        };
        self.caller.ctx.history.record_about(
            &self.caller.host(),
            &key,
            Event::PortLaunch {
                lane: self.caller.name.clone(),
                key: key.clone(),
                outcome: text,
            },
        );
        self.caller.after_call().await;
        outcome
    }

    async fn run_status(&self, _thread: &ThreadId, run: &RunId) -> Result<RunStatus, String> {
        let answer = match self.call(GatewayRequest::Lookup(run.clone())).await {
            Ok(GatewayResponse::Lookup(r)) => r,
            Ok(_) => Err("unexpected answer from the launcher".into()),
            Err(e) => Err(format!("launcher unreachable: {e}")),
        };
        let outcome = answer.as_ref().map_or("error", |s| s.as_str()).to_owned();
        self.caller.ctx.history.record_about(
            &self.caller.host(),
            run.as_str(),
            Event::PortLookup {
                lane: self.caller.name.clone(),
                run: run.to_string(),
                outcome,
            },
        );
        self.caller.after_call().await;
        answer
    }
}
