//! The `gateway` host in `langgraph` mode: a simulated LangGraph Agent Server
//! ([`crate::run::agent_server`]) — no idempotency by key, runs listed per thread, 409 only for the
//! `reject` strategy, one ambiguous 404, rollback cancels.
//!
//! The plan's launcher faults apply as in ledger mode: `gateway_busy` answers 409 to creates,
//! `gateway_errors` answers 5xx before or after creating the run, `lookup_errors` fails run
//! reads (status and lists), lost replies drop a create's answer after the run exists, and
//! slow, bad and lost runs decide how a run ends.

use super::fate::schedule_end;
use super::runs::{
    create_faults, ignores_interrupt, interrupted, lock, read_fails, serve_launch, CreateFaults,
    GatewayState, INTERRUPT_IGNORED,
};
use crate::history::{LaunchAnswer, Seen};
use crate::plan::WorkloadMark;
use crate::run::agent_server::{Created, Listed, ASSISTANT};
use crate::run::ctx::{now_ms, Ctx};
use crate::wire::gateway::{CreateAnswer, GatewayRequest, GatewayResponse, ListedRun};
use crate::wire::rpc::Reply;
use std::sync::{Arc, Mutex};
use tasklatch_core::ids::{OwnerId, RunId, ThreadId};
use tasklatch_core::ports::{LaunchOutcome, RunRequest, RunStatus};

/// Serves one request in `langgraph` mode (the ledger's idempotent launch is a 404 here).
pub(super) async fn handle(
    ctx: Arc<Ctx>,
    state: Arc<Mutex<GatewayState>>,
    req: GatewayRequest,
) -> Reply<GatewayResponse> {
    let t = now_ms();
    let answer = match req {
        GatewayRequest::CreateRun {
            req,
            assistant,
            reject,
        } => {
            return create(&ctx, &state, req, &assistant, reject, t);
        }
        GatewayRequest::ListRuns {
            thread,
            limit,
            offset,
        } => list_runs(&ctx, &state, &thread, (limit, offset), t),
        GatewayRequest::CancelRun { thread, run } => roll_back(&ctx, &state, &thread, &run),
        GatewayRequest::InterruptRun { ref run, .. } if ignores_interrupt(&ctx, &state, run) => {
            GatewayResponse::Done(Err(INTERRUPT_IGNORED.into()))
        }
        GatewayRequest::InterruptRun { thread, run } => interrupt(&ctx, &state, &thread, &run),
        GatewayRequest::GetAssistant(id) => GatewayResponse::Assistant(id == ASSISTANT),
        GatewayRequest::Lookup(run) => lookup(&ctx, &state, &run, t),
        GatewayRequest::CreateThread(owner, thread) => create_thread(&ctx, &state, owner, thread),
        GatewayRequest::DeleteThread(thread) => delete_thread(&state, &thread),
        GatewayRequest::Launch(_) => GatewayResponse::Launch(LaunchOutcome::Failed(
            "404: this server has no idempotent launch route".into(),
        )),
    };
    Reply::Send(answer)
}

/// `GET /threads/{thread}/runs`: a page (`limit`, `offset`) of the thread's runs, newest
/// first, recorded; 404 for a thread the server does not know. Runs a lost create
/// acknowledgement left unlisted are missing from it, this once.
fn list_runs(
    ctx: &Ctx,
    state: &Mutex<GatewayState>,
    thread: &ThreadId,
    (limit, offset): (u32, u32),
    t: u64,
) -> GatewayResponse {
    if read_fails(ctx, t) {
        return GatewayResponse::Runs(Err("gateway error 502".into()));
    }
    let page = listed_page(&mut lock(state), thread, (limit, offset));
    let count = page.as_ref().map(|p| p.len() as u32);
    let event = Seen::RunsListed {
        thread: thread.to_string(),
        offset,
        count,
    };
    ctx.history.record("gateway", None, event);
    let page = page.map(|p| {
        p.into_iter()
            .map(|(order, run, key)| ListedRun { order, run, key })
            .collect()
    });
    GatewayResponse::Runs(Ok(page))
}

/// The page (`limit`, `offset`) of `thread`'s runs as a replica that has not caught up with
/// the unlisted runs shows it: without them (they are listed from now on); `None` for a
/// thread the server does not know.
fn listed_page(
    st: &mut GatewayState,
    thread: &ThreadId,
    (limit, offset): (u32, u32),
) -> Option<Vec<Listed>> {
    let runs = st.server.list_runs(thread, u32::MAX, 0)?;
    let (missed, seen): (Vec<Listed>, Vec<Listed>) = runs
        .into_iter()
        .partition(|(_, run, _)| st.unlisted.contains(run));
    for (_, run, _) in missed {
        st.unlisted.remove(&run);
    }
    Some(
        seen.into_iter()
            .skip(offset as usize)
            .take(limit as usize)
            .collect(),
    )
}

/// `POST …/cancel?action=rollback`: a pending or running run is deleted (recorded); whether
/// it was, or 404.
fn roll_back(
    ctx: &Ctx,
    state: &Mutex<GatewayState>,
    thread: &ThreadId,
    run: &RunId,
) -> GatewayResponse {
    let rolled = lock(state).server.rollback(thread, run);
    if rolled == Some(true) {
        let key = lock(state).keys.get(run).cloned().unwrap_or_default();
        ctx.exercised(WorkloadMark::LauncherRollbackNewerRun, "gateway", None);
        let event = Seen::RunRolledBack {
            run: run.to_string(),
            key: key.clone(),
        };
        ctx.history.record_about("gateway", &key, event);
    }
    GatewayResponse::Cancelled(rolled.ok_or_else(|| "404 run not found".to_owned()))
}

/// `POST …/cancel?action=interrupt`: a run of `thread` ends as interrupted (a run this ended is
/// [`interrupted`]); 404 for a run the server does not have on that thread.
fn interrupt(
    ctx: &Ctx,
    state: &Mutex<GatewayState>,
    thread: &ThreadId,
    run: &RunId,
) -> GatewayResponse {
    let ended = {
        let mut st = lock(state);
        match st.server.find(run) {
            Some(r) if r.thread == *thread => Some(st.server.finish(run, RunStatus::Interrupted)),
            _ => None,
        }
    };
    if ended == Some(true) {
        interrupted(ctx, state, run);
    }
    GatewayResponse::Done(
        ended
            .map(|_| ())
            .ok_or_else(|| "404 run not found".to_owned()),
    )
}

/// A run's status: a `lookup_errors` fault fails the read, a run the gateway forgot is
/// missing, any other is as the server has it.
fn lookup(ctx: &Ctx, state: &Mutex<GatewayState>, run: &RunId, t: u64) -> GatewayResponse {
    if read_fails(ctx, t) {
        return GatewayResponse::Lookup(Err("gateway error 502 while reading the run".into()));
    }
    let st = lock(state);
    let status = if st.lost.contains(run) {
        RunStatus::Missing
    } else {
        st.server.status(run)
    };
    GatewayResponse::Lookup(Ok(status))
}

/// `POST /threads`: the thread is created (recorded).
fn create_thread(
    ctx: &Ctx,
    state: &Mutex<GatewayState>,
    owner: OwnerId,
    thread: ThreadId,
) -> GatewayResponse {
    lock(state).server.create_thread(&owner, &thread);
    let event = Seen::ThreadCreated {
        owner: owner.to_string(),
        thread: thread.to_string(),
    };
    ctx.history.record("gateway", None, event);
    GatewayResponse::Done(Ok(()))
}

/// `DELETE /threads/{thread}`: its runs disappear — none of them can end any more, stuck or
/// not.
fn delete_thread(state: &Mutex<GatewayState>, thread: &ThreadId) -> GatewayResponse {
    let mut st = lock(state);
    for run in st.server.delete_thread(thread) {
        st.scheduled.remove(&run);
    }
    GatewayResponse::Done(Ok(()))
}

/// `POST /threads/{thread}/runs`: faults first (409 window, 5xx before the insert), then the
/// server (no idempotency), then 5xx after the insert and lost replies.
fn create(
    ctx: &Arc<Ctx>,
    state: &Arc<Mutex<GatewayState>>,
    req: RunRequest,
    assistant: &str,
    reject: bool,
    t: u64,
) -> Reply<GatewayResponse> {
    let CreateFaults { busy, errors } = create_faults(ctx, t);
    let mut created_run = None;
    let (answer, wire) = if let Some(index) = busy {
        ctx.fire(index, "gateway");
        (LaunchAnswer::Busy, CreateAnswer::Busy)
    } else if let Some((index, false)) = errors {
        ctx.fire(index, "gateway");
        (
            LaunchAnswer::Error,
            CreateAnswer::Error("gateway error 503".into()),
        )
    } else if assistant != ASSISTANT {
        (LaunchAnswer::Gone, CreateAnswer::NotFound)
    } else {
        let (answer, wire, created) = server_create(ctx, state, &req, reject, errors, t);
        created_run = created;
        (answer, wire)
    };
    serve_launch(
        ctx,
        state,
        &req,
        answer,
        created_run,
        GatewayResponse::Created(wire),
    )
}

/// The server's create of a run for `req` at `t`: a new run (started, or queued behind an
/// active one) is scheduled to end and returned as created — answered 500 if a 5xx fault in
/// `errors` strikes after the insert; or 409 (busy thread, `reject`), or 404.
fn server_create(
    ctx: &Arc<Ctx>,
    state: &Arc<Mutex<GatewayState>>,
    req: &RunRequest,
    reject: bool,
    errors: Option<(usize, bool)>,
    t: u64,
) -> (LaunchAnswer, CreateAnswer, Option<String>) {
    let made = lock(state)
        .server
        .create_run(&req.thread, &req.key, reject, t);
    match made {
        Created::Run { run, queued } => {
            let created_run = Some(run.to_string());
            started(ctx, state, req, &run, queued, t);
            let (answer, wire) = match errors {
                Some((index, true)) => {
                    ctx.fire(index, "gateway");
                    let e = "gateway error 500 after accepting the run";
                    (LaunchAnswer::Error, CreateAnswer::Error(e.into()))
                }
                _ => (
                    LaunchAnswer::Started {
                        run: run.to_string(),
                    },
                    CreateAnswer::Created(run),
                ),
            };
            (answer, wire, created_run)
        }
        Created::Busy => {
            ctx.exercised(WorkloadMark::Launcher409BusyThread, "gateway", None);
            (LaunchAnswer::Busy, CreateAnswer::Busy, None)
        }
        Created::NotFound => {
            ctx.exercised(WorkloadMark::Launcher404ThreadGone, "gateway", None);
            (LaunchAnswer::Gone, CreateAnswer::NotFound, None)
        }
    }
}

/// A run the server just made: labelled with its key's task, recorded if queued, and
/// scheduled to end.
fn started(
    ctx: &Arc<Ctx>,
    state: &Arc<Mutex<GatewayState>>,
    req: &RunRequest,
    run: &RunId,
    queued: bool,
    t: u64,
) {
    {
        let mut st = lock(state);
        st.keys.insert(run.clone(), req.key.clone());
        st.scheduled.insert(run.clone());
    }
    ctx.history.alias(run.as_str(), &req.key);
    if queued {
        let event = Seen::RunQueued {
            run: run.to_string(),
            key: req.key.clone(),
        };
        ctx.history.record_about("gateway", &req.key, event);
    }
    schedule_end(
        ctx.clone(),
        None,
        state.clone(),
        run.clone(),
        req.key.clone(),
        t,
    );
}
