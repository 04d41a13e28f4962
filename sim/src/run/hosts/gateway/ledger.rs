//! The `gateway` host in `ledger` mode: an idempotent run ledger in the backend — the same key
//! yields the same run, 409 while a run is active on the thread, 404 for deleted threads.

use super::fate::schedule_end;
use super::runs::{
    create_faults, ignores_interrupt, interrupted, lock, now_ts, read_fails, serve_launch,
    CreateFaults, GatewayState, INTERRUPT_IGNORED,
};
use crate::history::{LaunchAnswer, Seen};
use crate::plan::WorkloadMark;
use crate::run::backend::Backend;
use crate::run::ctx::{now_ms, Ctx};
use crate::run::ledger_call::{LedgerAnswer, LedgerCall};
use crate::wire::gateway::{GatewayRequest, GatewayResponse};
use crate::wire::rpc::Reply;
use std::sync::{Arc, Mutex};
use tasklatch_core::ids::RunId;
use tasklatch_core::ports::{LaunchOutcome, RunRequest, RunStatus};

/// Serves one request in `ledger` mode (the routes of the LangGraph mode are 404s here).
pub(super) async fn handle(
    ctx: Arc<Ctx>,
    backend: Backend,
    state: Arc<Mutex<GatewayState>>,
    req: GatewayRequest,
) -> Reply<GatewayResponse> {
    let t = now_ms();
    let answer = match req {
        GatewayRequest::Launch(run) => return launch(&ctx, &backend, &state, run, t).await,
        GatewayRequest::Lookup(run) => {
            GatewayResponse::Lookup(lookup(&ctx, &backend, &state, run, t).await)
        }
        GatewayRequest::CreateThread(ref owner, ref thread) => {
            let created = Seen::ThreadCreated {
                owner: owner.to_string(),
                thread: thread.to_string(),
            };
            GatewayResponse::Done(create_thread(&ctx, &backend, req, created).await)
        }
        GatewayRequest::DeleteThread(_) => GatewayResponse::Done(done(
            backend
                .ledger(LedgerCall::DeleteThread(req, now_ts()))
                .await,
        )),
        GatewayRequest::InterruptRun { ref run, .. } if ignores_interrupt(&ctx, &state, run) => {
            GatewayResponse::Done(Err(INTERRUPT_IGNORED.into()))
        }
        GatewayRequest::InterruptRun { run, .. } => {
            GatewayResponse::Done(interrupt(&ctx, &backend, &state, run).await)
        }
        GatewayRequest::ListRuns { .. }
        | GatewayRequest::CreateRun { .. }
        | GatewayRequest::CancelRun { .. }
        | GatewayRequest::GetAssistant(_) => {
            GatewayResponse::Done(Err("404: the ledger gateway has no such route".into()))
        }
    };
    Reply::Send(answer)
}

/// A run's status: a `lookup_errors` fault fails the read, a run the gateway forgot is
/// missing, any other is as the ledger has it.
async fn lookup(
    ctx: &Ctx,
    backend: &Backend,
    state: &Mutex<GatewayState>,
    run: RunId,
    t: u64,
) -> Result<RunStatus, String> {
    if read_fails(ctx, t) {
        return Err("gateway error 502 while reading the run".into());
    }
    let lost = lock(state).lost.contains(&run);
    if lost {
        return Ok(RunStatus::Missing);
    }
    match backend.ledger(LedgerCall::Status(run)).await {
        LedgerAnswer::Status(r) => r.map_err(|e| e.to_string()),
        _ => Err("ledger answered out of turn".into()),
    }
}

/// Creates the thread `req` names in the ledger; a thread created is recorded as `created`.
async fn create_thread(
    ctx: &Ctx,
    backend: &Backend,
    req: GatewayRequest,
    created: Seen,
) -> Result<(), String> {
    let answer = backend
        .ledger(LedgerCall::CreateThread(req, now_ts()))
        .await;
    if matches!(answer, LedgerAnswer::Done(Ok(_))) {
        ctx.history.record("gateway", None, created);
    }
    done(answer)
}

/// Ends `run` as interrupted in the ledger; a run this ended is [`interrupted`].
async fn interrupt(
    ctx: &Ctx,
    backend: &Backend,
    state: &Mutex<GatewayState>,
    run: RunId,
) -> Result<(), String> {
    let answer = backend
        .ledger(LedgerCall::Finish(
            run.clone(),
            RunStatus::Interrupted,
            now_ts(),
        ))
        .await;
    if matches!(answer, LedgerAnswer::Done(Ok(true))) {
        interrupted(ctx, state, &run);
    }
    done(answer)
}

/// A ledger call's plain answer: done, or why not.
fn done(answer: LedgerAnswer) -> Result<(), String> {
    match answer {
        LedgerAnswer::Done(r) => r.map(|_| ()).map_err(|e| e.to_string()),
        _ => Err("ledger answered out of turn".into()),
    }
}

/// A launch: faults first (409 window, 5xx before the insert), then the ledger, then 5xx
/// after the insert and lost replies.
async fn launch(
    ctx: &Arc<Ctx>,
    backend: &Backend,
    state: &Arc<Mutex<GatewayState>>,
    req: RunRequest,
    t: u64,
) -> Reply<GatewayResponse> {
    let CreateFaults { busy, errors } = create_faults(ctx, t);
    let mut created_run = None;
    let (answer, outcome) = if let Some(index) = busy {
        ctx.fire(index, "gateway");
        (LaunchAnswer::Busy, LaunchOutcome::Busy)
    } else if let Some((index, false)) = errors {
        ctx.fire(index, "gateway");
        (
            LaunchAnswer::Error,
            LaunchOutcome::Unavailable("gateway error 503".into()),
        )
    } else {
        let (answer, outcome, created) = start(ctx, backend, state, &req, t).await;
        created_run = created;
        match (errors, &outcome) {
            (Some((index, true)), LaunchOutcome::Started(_)) => {
                ctx.fire(index, "gateway");
                (
                    LaunchAnswer::Error,
                    LaunchOutcome::Unavailable("gateway error 500 after accepting the run".into()),
                )
            }
            _ => (answer, outcome),
        }
    };
    let response = GatewayResponse::Launch(outcome);
    serve_launch(ctx, state, &req, answer, created_run, response)
}

/// Starts (or finds) the run for the request's key in the ledger; a run new to the gateway is
/// scheduled to end, and returned as the created run.
async fn start(
    ctx: &Arc<Ctx>,
    backend: &Backend,
    state: &Arc<Mutex<GatewayState>>,
    req: &RunRequest,
    t: u64,
) -> (LaunchAnswer, LaunchOutcome, Option<String>) {
    let outcome = match backend
        .ledger(LedgerCall::Start(req.clone(), now_ts()))
        .await
    {
        LedgerAnswer::Launch(Ok(o)) => o,
        LedgerAnswer::Launch(Err(e)) => LaunchOutcome::Unavailable(e.to_string()),
        _ => LaunchOutcome::Failed("ledger answered out of turn".into()),
    };
    let mut created_run = None;
    let answer = match &outcome {
        LaunchOutcome::Started(run) => {
            let new = {
                let mut st = lock(state);
                let new = st.known.insert(run.clone()) && st.scheduled.insert(run.clone());
                if new {
                    st.keys.insert(run.clone(), req.key.clone());
                }
                new
            };
            if new {
                ctx.history.alias(run.as_str(), &req.key);
                let (ended, key) = (run.clone(), req.key.clone());
                let backend = Some(backend.clone());
                schedule_end(ctx.clone(), backend, state.clone(), ended, key, t);
                created_run = Some(run.to_string());
            }
            LaunchAnswer::Started {
                run: run.to_string(),
            }
        }
        LaunchOutcome::Busy => {
            ctx.exercised(WorkloadMark::Launcher409BusyThread, "gateway", None);
            LaunchAnswer::Busy
        }
        LaunchOutcome::ThreadGone => {
            ctx.exercised(WorkloadMark::Launcher404ThreadGone, "gateway", None);
            LaunchAnswer::Gone
        }
        LaunchOutcome::Failed(_) | LaunchOutcome::Unavailable(_) => LaunchAnswer::Error,
    };
    (answer, outcome, created_run)
}
