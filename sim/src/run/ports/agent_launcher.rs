//! The launcher port's `start_run` in `langgraph` mode: what the real Agent Server launcher
//! (`agent-server/`) does, over the simulated server — "two looks, oldest wins".
//!
//! 1. **First look** (within one launcher deadline): the thread's runs, newest first, at most
//!    [`PAGE_LIMIT`] pages of [`PAGE_SIZE`], up to the first page holding the key. Runs holding
//!    it → [`oldest_wins`]: report the oldest, roll back the others.
//! 2. The create is sent only if that deadline has not passed. **The lane's pause point sits
//!    after this check** — the real launcher's remaining window (a process frozen between its
//!    last check and the socket write) — and again after the create returns.
//! 3. **Create** with `multitask_strategy: reject`: 409 → busy; 404 → the assistant is
//!    checked (the server's 404 is ambiguous) → thread gone; a 5xx or no answer → failed (the
//!    run may exist: a retry of the key finds it).
//! 4. **Second look** (within a second deadline, so the whole call takes at most two launcher
//!    deadlines — below `min_lease_left`): [`oldest_wins`] with the new run; if another run holds
//!    the key and is older, the new run is rolled back and the oldest reported. If the second
//!    look fails, the new run is rolled back and the launch failed: a run is only kept once a
//!    look has confirmed it is the oldest.

use super::caller::Caller;
use super::gateway_call::call_gateway;
use crate::run::agent_server::ASSISTANT;
use crate::wire::gateway::{CreateAnswer, GatewayRequest, GatewayResponse, ListedRun};
use tasklatch_core::ids::{RunId, ThreadId};
use tasklatch_core::mutation::{self, Mutant};
use tasklatch_core::ports::{LaunchOutcome, RunRequest};
use tasklatch_core::reconcile::oldest_wins;
use tokio::time::Instant;

/// Runs per lookup page.
pub const PAGE_SIZE: u32 = 5;
/// Pages per lookup.
pub const PAGE_LIMIT: u32 = 4;

/// What a look saw: the runs holding the key, or 404.
enum Look {
    Runs(Vec<((u64, u64), RunId)>),
    NotFound,
}

/// `start_run` against the simulated Agent Server, every call made as `caller` (whose lane
/// pauses where the module doc says).
pub async fn start_run(caller: &Caller, req: &RunRequest) -> LaunchOutcome {
    let budget = caller.ctx.timeouts.launcher;
    let deadline = Instant::now() + budget;
    if !mutation::active(Mutant::LauncherSkipsKeyLookup) {
        match look(&req.thread, &req.key, deadline).await {
            Ok(Look::Runs(seen)) => {
                if let Some(d) = oldest_wins(None, &seen) {
                    cancel_all(&req.thread, &d.cancel, deadline).await;
                    return LaunchOutcome::Started(d.deliver);
                }
            }
            Ok(Look::NotFound) => return not_found(deadline).await,
            Err(e) => return LaunchOutcome::Unavailable(format!("run lookup: {e}")),
        }
    }
    if Instant::now() >= deadline {
        return LaunchOutcome::Unavailable("the call's deadline passed before the create".into());
    }
    caller.after_call().await;
    let mine = match create(req, deadline).await {
        Ok(CreateAnswer::Created(run)) => run,
        Ok(CreateAnswer::Busy) => return LaunchOutcome::Busy,
        Ok(CreateAnswer::NotFound) => return not_found(deadline).await,
        Ok(CreateAnswer::Error(e)) | Err(e) => {
            return LaunchOutcome::Unavailable(format!("create: {e}; the run may exist"))
        }
    };
    caller.after_call().await;
    second_look(caller, req, mine).await
}

/// After a create: look again, keep the oldest run holding the key, roll back the others.
async fn second_look(caller: &Caller, req: &RunRequest, mine: RunId) -> LaunchOutcome {
    let deadline = Instant::now() + caller.ctx.timeouts.launcher;
    let seen = match look(&req.thread, &req.key, deadline).await {
        Ok(Look::Runs(seen)) => seen,
        Ok(Look::NotFound) => return LaunchOutcome::ThreadGone,
        Err(e) => {
            cancel_all(&req.thread, std::slice::from_ref(&mine), deadline).await;
            return LaunchOutcome::Unavailable(format!(
                "second look: {e}; the new run was rolled back"
            ));
        }
    };
    match oldest_wins(Some(&mine), &seen) {
        Some(d) => {
            cancel_all(&req.thread, &d.cancel, deadline).await;
            LaunchOutcome::Started(d.deliver)
        }
        None => LaunchOutcome::Started(mine),
    }
}

/// The time left before `deadline`, or an error if none is.
fn left(deadline: Instant) -> Result<std::time::Duration, String> {
    let now = Instant::now();
    if now >= deadline {
        return Err("the call's deadline passed".into());
    }
    Ok(deadline - now)
}

/// The runs of `thread` holding `key`: pages newest first until the first page holding the
/// key, a short page, or the page limit.
async fn look(thread: &ThreadId, key: &str, deadline: Instant) -> Result<Look, String> {
    let mut seen = Vec::new();
    for page in 0..PAGE_LIMIT {
        let req = GatewayRequest::ListRuns {
            thread: thread.clone(),
            limit: PAGE_SIZE,
            offset: page * PAGE_SIZE,
        };
        let runs: Vec<ListedRun> = match call_gateway(&req, left(deadline)?).await {
            Ok(GatewayResponse::Runs(Ok(Some(runs)))) => runs,
            Ok(GatewayResponse::Runs(Ok(None))) => return Ok(Look::NotFound),
            Ok(GatewayResponse::Runs(Err(e))) => return Err(e),
            Ok(_) => return Err("unexpected answer".into()),
            Err(e) => return Err(e.to_string()),
        };
        let short = runs.len() < PAGE_SIZE as usize;
        seen.extend(
            runs.into_iter()
                .filter(|r| r.key == key)
                .map(|r| (r.order, r.run)),
        );
        if short || !seen.is_empty() {
            break;
        }
    }
    Ok(Look::Runs(seen))
}

/// The create, with the `reject` strategy, of a run for `req`.
async fn create(req: &RunRequest, deadline: Instant) -> Result<CreateAnswer, String> {
    let call = GatewayRequest::CreateRun {
        req: req.clone(),
        assistant: ASSISTANT.into(),
        reject: true,
    };
    match call_gateway(&call, left(deadline)?).await {
        Ok(GatewayResponse::Created(answer)) => Ok(answer),
        Ok(_) => Err("unexpected answer".into()),
        Err(e) => Err(e.to_string()),
    }
}

/// Rolls back `runs` (best effort: a run that already ended stays, and is a duplicate).
async fn cancel_all(thread: &ThreadId, runs: &[RunId], deadline: Instant) {
    for run in runs {
        let Ok(time) = left(deadline) else { return };
        let req = GatewayRequest::CancelRun {
            thread: thread.clone(),
            run: run.clone(),
        };
        let _ = call_gateway(&req, time).await;
    }
}

/// A 404: the thread is gone if the assistant exists (the server's 404 names either).
async fn not_found(deadline: Instant) -> LaunchOutcome {
    let Ok(time) = left(deadline) else {
        return LaunchOutcome::Unavailable("404, and no time left to check the assistant".into());
    };
    match call_gateway(&GatewayRequest::GetAssistant(ASSISTANT.into()), time).await {
        Ok(GatewayResponse::Assistant(true)) => LaunchOutcome::ThreadGone,
        Ok(GatewayResponse::Assistant(false)) => {
            LaunchOutcome::Failed("404, and the assistant is missing".into())
        }
        _ => LaunchOutcome::Unavailable("404, and the assistant check failed".into()),
    }
}
