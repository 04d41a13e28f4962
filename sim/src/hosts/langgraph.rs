//! The `gateway` host in `langgraph` mode: a simulated LangGraph Agent Server
//! ([`crate::agent_server`]) — no idempotency by key, runs listed per thread, 409 only for the
//! `reject` strategy, one ambiguous 404, rollback cancels.
//!
//! The plan's launcher faults apply as in ledger mode: `gateway_busy` answers 409 to creates,
//! `gateway_errors` answers 5xx before or after creating the run, `lookup_errors` fails run
//! reads (status and lists), lost replies drop a create's answer after the run exists, and
//! slow, bad and lost runs decide how a run ends.

use super::gateway::{schedule_end, GatewayState};
use crate::agent_server::{Created, ASSISTANT};
use crate::coverage::Feature;
use crate::ctx::{now_ms, Ctx};
use crate::fault::{FaultKind, Service};
use crate::history::{Event, LaunchAnswer};
use crate::wire::gateway::{CreateAnswer, GatewayRequest, GatewayResponse, ListedRun};
use crate::wire::rpc::Reply;
use std::sync::{Arc, Mutex, MutexGuard};
use tasklatch_core::ports::{RunRequest, RunStatus};

fn lock(state: &Mutex<GatewayState>) -> MutexGuard<'_, GatewayState> {
    state.lock().unwrap_or_else(|p| p.into_inner())
}

/// Serves one request in `langgraph` mode.
pub async fn handle(
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
        } => {
            if read_fails(&ctx, t) {
                return Reply::Send(GatewayResponse::Runs(Err("gateway error 502".into())));
            }
            let page = lock(&state).server.list_runs(&thread, limit, offset);
            let count = page.as_ref().map(|p| p.len() as u32);
            let event = Event::RunsListed {
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
        GatewayRequest::CancelRun { thread, run } => {
            let rolled = lock(&state).server.rollback(&thread, &run);
            if rolled == Some(true) {
                let key = lock(&state).keys.get(&run).cloned().unwrap_or_default();
                ctx.exercised(Feature::LauncherRollbackNewerRun, "gateway", None);
                let event = Event::RunRolledBack {
                    run: run.to_string(),
                    key: key.clone(),
                };
                ctx.history.record_about("gateway", &key, event);
            }
            GatewayResponse::Cancelled(rolled.ok_or_else(|| "404 run not found".to_owned()))
        }
        GatewayRequest::InterruptRun { ref run, .. }
            if super::gateway::ignores_interrupt(&ctx, &state, run) =>
        {
            GatewayResponse::Done(Err(super::gateway::INTERRUPT_IGNORED.into()))
        }
        GatewayRequest::InterruptRun { thread, run } => {
            let ended = {
                let mut st = lock(&state);
                match st.server.find(&run) {
                    Some(r) if r.thread == thread => {
                        Some(st.server.finish(&run, RunStatus::Interrupted))
                    }
                    _ => None,
                }
            };
            if ended == Some(true) {
                super::gateway::interrupted(&ctx, &state, &run);
            }
            GatewayResponse::Done(
                ended
                    .map(|_| ())
                    .ok_or_else(|| "404 run not found".to_owned()),
            )
        }
        GatewayRequest::GetAssistant(id) => GatewayResponse::Assistant(id == ASSISTANT),
        GatewayRequest::Lookup(run) => {
            if read_fails(&ctx, t) {
                return Reply::Send(GatewayResponse::Lookup(Err(
                    "gateway error 502 while reading the run".into(),
                )));
            }
            let st = lock(&state);
            let status = if st.lost.contains(&run) {
                RunStatus::Missing
            } else {
                st.server.status(&run)
            };
            GatewayResponse::Lookup(Ok(status))
        }
        GatewayRequest::CreateThread(owner, thread) => {
            lock(&state).server.create_thread(&owner, &thread);
            let event = Event::ThreadCreated {
                owner: owner.to_string(),
                thread: thread.to_string(),
            };
            ctx.history.record("gateway", None, event);
            GatewayResponse::Done(Ok(()))
        }
        GatewayRequest::DeleteThread(thread) => {
            // Its runs disappear: none of them can end any more, stuck or not.
            let mut st = lock(&state);
            for run in st.server.delete_thread(&thread) {
                st.scheduled.remove(&run);
            }
            GatewayResponse::Done(Ok(()))
        }
        GatewayRequest::Launch(_) => {
            GatewayResponse::Launch(tasklatch_core::ports::LaunchOutcome::Failed(
                "404: this server has no idempotent launch route".into(),
            ))
        }
    };
    Reply::Send(answer)
}

/// Whether a `lookup_errors` fault fails this read.
fn read_fails(ctx: &Ctx, t: u64) -> bool {
    match ctx
        .active(t, |k| matches!(k, FaultKind::LookupErrors).then_some(()))
        .next()
    {
        Some((index, ())) => {
            ctx.fire(index, "gateway");
            true
        }
        None => false,
    }
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
    let (busy, errors) = super::gateway::create_faults(ctx, t);
    let mut created_run = None;
    let (answer, wire) = if let Some((index, ())) = busy {
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
        let made = lock(state)
            .server
            .create_run(&req.thread, &req.key, reject, t);
        match made {
            Created::Run { run, queued } => {
                created_run = Some(run.to_string());
                started(ctx, state, &req, &run, queued, t);
                match errors {
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
                }
            }
            Created::Busy => {
                ctx.exercised(Feature::Launcher409BusyThread, "gateway", None);
                (LaunchAnswer::Busy, CreateAnswer::Busy)
            }
            Created::NotFound => {
                ctx.exercised(Feature::Launcher404ThreadGone, "gateway", None);
                (LaunchAnswer::Gone, CreateAnswer::NotFound)
            }
        }
    };
    let dropped = super::lose_reply(ctx, Service::Gateway, &lock(state).replies);
    ctx.history.record_about(
        "gateway",
        &req.key,
        Event::LaunchServed {
            key: req.key.clone(),
            owner: req.owner.to_string(),
            thread: req.thread.to_string(),
            prompt: req.prompt.clone(),
            answer,
            created_run,
            dropped,
        },
    );
    if dropped {
        Reply::Drop
    } else {
        Reply::Send(GatewayResponse::Created(wire))
    }
}

/// A run the server just made: labelled with its key's task, recorded if queued, and
/// scheduled to end.
fn started(
    ctx: &Arc<Ctx>,
    state: &Arc<Mutex<GatewayState>>,
    req: &RunRequest,
    run: &tasklatch_core::ids::RunId,
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
        let event = Event::RunQueued {
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

/// Waits until no older run of `run`'s thread is active, then starts it (a queued run).
pub async fn wait_turn(state: &Mutex<GatewayState>, run: &tasklatch_core::ids::RunId) {
    loop {
        let blocked = {
            let st = lock(state);
            match st.server.find(run) {
                Some(me) if me.status == RunStatus::Pending => st.server.blocked(me),
                _ => false,
            }
        };
        if !blocked {
            lock(state).server.start(run);
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}
