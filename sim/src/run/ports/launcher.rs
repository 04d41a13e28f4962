//! The launcher port: the run launcher reached at the `gateway` host, every call recorded.
//! In `langgraph` mode `start_run` is the Agent Server launcher's lookup, create and second
//! look (module `agent_launcher`); the recording and the pause at the end are the same.

use super::agent_launcher;
use super::caller::Caller;
use super::gateway_call::call_gateway;
use crate::history::{now_us, Seen};
use crate::plan::gateway_mode::GatewayMode;
use crate::wire::gateway::{GatewayRequest, GatewayResponse};
use crate::wire::rpc::CallError;
use tasklatch_core::ids::{RunId, ThreadId};
use tasklatch_core::ports::{LaunchOutcome, Launcher, RunRequest, RunStatus};

/// The launcher, reached at the `gateway` host.
pub struct RpcLauncher {
    /// Who calls.
    pub caller: Caller,
}

impl RpcLauncher {
    /// Sends one gateway request with the launcher deadline.
    pub async fn call(&self, req: GatewayRequest) -> Result<GatewayResponse, CallError> {
        call_gateway(&req, self.caller.ctx.timeouts.launcher).await
    }
}

impl Launcher for RpcLauncher {
    async fn start_run(&self, req: RunRequest) -> LaunchOutcome {
        let key = req.key.clone();
        let started_us = now_us();
        let outcome = if self.caller.ctx.plan.gateway == GatewayMode::Langgraph {
            agent_launcher::start_run(&self.caller, &req).await
        } else {
            match self.call(GatewayRequest::Launch(req)).await {
                Ok(GatewayResponse::Launch(o)) => o,
                Ok(_) => LaunchOutcome::Failed("unexpected answer from the launcher".into()),
                Err(e) => LaunchOutcome::Unavailable(format!("launcher unreachable: {e}")),
            }
        };
        let text = match &outcome {
            LaunchOutcome::Started(run) => format!("started:{run}"),
            LaunchOutcome::Busy => "busy".into(),
            LaunchOutcome::ThreadGone => "gone".into(),
            LaunchOutcome::Failed(_) => "failed".into(),
            LaunchOutcome::Unavailable(_) => "unavailable".into(),
        };
        self.caller.ctx.history.record_about(
            &self.caller.host(),
            &key,
            Seen::PortLaunch {
                lane: self.caller.name.clone(),
                key: key.clone(),
                outcome: text,
                started_us,
            },
        );
        self.caller.after_call().await;
        outcome
    }

    async fn run_status(&self, _thread: &ThreadId, run: &RunId) -> Result<RunStatus, String> {
        let started_us = now_us();
        let answer = match self.call(GatewayRequest::Lookup(run.clone())).await {
            Ok(GatewayResponse::Lookup(r)) => r,
            Ok(_) => Err("unexpected answer from the launcher".into()),
            Err(e) => Err(format!("launcher unreachable: {e}")),
        };
        let outcome = answer.as_ref().map_or("error", |s| s.as_str()).to_owned();
        self.caller.ctx.history.record_about(
            &self.caller.host(),
            run.as_str(),
            Seen::PortLookup {
                lane: self.caller.name.clone(),
                run: run.to_string(),
                outcome,
                started_us,
            },
        );
        self.caller.after_call().await;
        answer
    }

    async fn interrupt_run(&self, thread: &ThreadId, run: &RunId) -> Result<(), String> {
        let started_us = now_us();
        let req = GatewayRequest::InterruptRun {
            thread: thread.clone(),
            run: run.clone(),
        };
        let answer = match self.call(req).await {
            Ok(GatewayResponse::Done(r)) => r,
            Ok(_) => Err("unexpected answer from the launcher".into()),
            Err(e) => Err(format!("launcher unreachable: {e}")),
        };
        let outcome = if answer.is_ok() {
            "interrupted"
        } else {
            "error"
        };
        self.caller.ctx.history.record_about(
            &self.caller.host(),
            run.as_str(),
            Seen::PortInterrupt {
                lane: self.caller.name.clone(),
                run: run.to_string(),
                outcome: outcome.to_owned(),
                started_us,
            },
        );
        self.caller.after_call().await;
        answer
    }
}
