//! The `mcp` host: a remote task server whose tasks follow the plan's scripts.
//!
//! What a task looks like at any moment is the pure `model`; this module serves requests over
//! it — a submit creates a task with fresh secrets (`content`), and status polls, cancels and
//! answers are answered with the `report` of the task's view — applies the plan's `faults`,
//! marks the coverage the answers exercise (`marks`), and records every answer it serves, all
//! on the server's `state`. At the end of a run the world reads each task's `truth`.

mod content;
mod error_text;
mod faults;
mod marks;
mod model;
mod report;
mod state;
mod truth;

#[cfg(test)]
pub(crate) use content::FORGED;
pub use model::{view_at, RemoteTask, View};
pub use state::McpState;
pub use truth::RemoteTruth;

use crate::history::{RemoteOp, Seen};
use crate::plan::naming::{task_label, task_number};
use crate::plan::WorkloadMark;
use crate::plan::{QuirkKind, ScriptStatus};
use crate::run::ctx::{now_ms, Ctx};
use crate::wire::mcp::{McpAnswer, McpRequest};
use crate::wire::rpc::{serve, Reply};
use content::secrets;
use marks::AnswerTally;
use model::CancelTaken;
use rand::RngCore;
use report::report;
use state::Hosted;
use std::sync::{Arc, Mutex};

/// The `mcp` host's software.
pub async fn host(ctx: Arc<Ctx>, state: Arc<Mutex<McpState>>) -> turmoil::Result {
    serve(move |req: McpRequest| {
        let ctx = ctx.clone();
        let state = state.clone();
        async move {
            faults::slow_remote(&ctx, &req).await;
            answer(&ctx, &state, req)
        }
    })
    .await
}

/// How one request was served.
enum Served {
    /// A request about a remote task: (its remote id, the operation, the answer), recorded.
    Placed(String, RemoteOp, McpAnswer),
    /// A request the server cannot place (unknown job, unknown task): answered unrecorded.
    Unplaced(McpAnswer),
}

/// Answers one request: restarts due first, then the request, then a lost reply may drop the
/// answer; every placed request's answer is recorded, dropped or not.
fn answer(ctx: &Ctx, state: &Mutex<McpState>, req: McpRequest) -> Reply<McpAnswer> {
    let t = now_ms();
    let mut st = state.lock().unwrap_or_else(|p| p.into_inner());
    faults::restart(ctx, &mut st, t);
    let (remote_id, op, answer) = match dispatch(ctx, &mut st, req, t) {
        Served::Placed(remote_id, op, answer) => (remote_id, op, answer),
        Served::Unplaced(answer) => return Reply::Send(answer),
    };
    let dropped = faults::reply_lost(ctx, &st);
    drop(st);
    ctx.history.record_about(
        "mcp",
        &remote_id,
        Seen::RemoteServed {
            remote_id: remote_id.clone(),
            op,
            answer: answer.clone(),
            dropped,
        },
    );
    if dropped {
        Reply::Drop
    } else {
        Reply::Send(answer)
    }
}

/// Serves `req` at `t`: a task a restart forgot is unknown (recorded), a task never created is
/// unknown (unrecorded).
fn dispatch(ctx: &Ctx, st: &mut McpState, req: McpRequest, t: u64) -> Served {
    match req {
        McpRequest::Submit { owner, input } => match submit(ctx, st, owner, &input, t) {
            Some((id, answer)) => Served::Placed(id, RemoteOp::Submit, answer),
            None => Served::Unplaced(McpAnswer::Rejected("unknown job".into())),
        },
        McpRequest::Status { remote_id } if st.forgotten.contains_key(&remote_id) => {
            Served::Placed(remote_id, RemoteOp::Status, McpAnswer::Unknown)
        }
        McpRequest::Cancel { remote_id } if st.forgotten.contains_key(&remote_id) => {
            Served::Placed(remote_id, RemoteOp::Cancel, McpAnswer::Unknown)
        }
        McpRequest::Answer { remote_id, .. } if st.forgotten.contains_key(&remote_id) => {
            Served::Placed(remote_id, RemoteOp::Answer, McpAnswer::Unknown)
        }
        McpRequest::Status { remote_id }
        | McpRequest::Cancel { remote_id }
        | McpRequest::Answer { remote_id, .. }
            if !st.tasks.contains_key(&remote_id) =>
        {
            Served::Unplaced(McpAnswer::Unknown)
        }
        McpRequest::Status { remote_id } => {
            let answer = status(ctx, st, &remote_id, t);
            Served::Placed(remote_id, RemoteOp::Status, answer)
        }
        McpRequest::Cancel { remote_id } => {
            let answer = cancel(ctx, st, &remote_id, t);
            Served::Placed(remote_id, RemoteOp::Cancel, answer)
        }
        McpRequest::Answer {
            remote_id,
            request_id,
            text,
        } => {
            let answer = faults::transient_error(ctx, st, t, &remote_id)
                .unwrap_or_else(|| take_answer(ctx, st, &remote_id, request_id, text, t));
            Served::Placed(remote_id, RemoteOp::Answer, answer)
        }
    }
}

/// A submit of the plan's task named by `input`: a new remote task (or, for the duplicate
/// handle quirk, an earlier task of the same owner) and its first report; `None` for an
/// input that names no task of the plan.
fn submit(
    ctx: &Ctx,
    st: &mut McpState,
    owner: String,
    input: &str,
    t: u64,
) -> Option<(String, McpAnswer)> {
    let plan = task_number(input)
        .and_then(|n| u32::try_from(n).ok())
        .and_then(|n| ctx.plan.task(n))?;
    let duplicate = plan
        .quirk
        .as_ref()
        .is_some_and(|q| q.kind == QuirkKind::DuplicateHandle);
    let earlier = st
        .tasks
        .values()
        .map(|hosted| &hosted.task)
        .find(|e| e.owner == owner && e.n != plan.n)
        .cloned();
    let task = match (duplicate, earlier) {
        (true, Some(e)) => {
            reused(ctx, plan.n, &e);
            e
        }
        _ => create(ctx, st, plan.n, owner, t),
    };
    let task_plan = ctx.plan.task(task.n)?;
    let answer = match report(&task, task_plan, view_at(&task, task_plan, t)) {
        McpAnswer::Report(r) => McpAnswer::Created {
            remote_id: task.remote_id.clone(),
            driver_data: task.driver_data.clone(),
            report: r,
        },
        other => other,
    };
    Some((task.remote_id, answer))
}

/// Records that plan task `n`'s submit was handed `earlier`, a task of the same owner.
fn reused(ctx: &Ctx, n: u32, earlier: &RemoteTask) {
    ctx.exercised(
        WorkloadMark::RemoteDuplicateHandle,
        "mcp",
        Some(task_label(n)),
    );
    ctx.history.record(
        "mcp",
        Some(task_label(n)),
        Seen::RemoteReused {
            n,
            remote_id: earlier.remote_id.clone(),
        },
    );
}

/// Creates remote task `n` for `owner` at `t`, with fresh secrets, and records it.
fn create(ctx: &Ctx, st: &mut McpState, n: u32, owner: String, t: u64) -> RemoteTask {
    let mut tag = [0u8; 6];
    st.rng.fill_bytes(&mut tag);
    let (shape, remote_id, driver_data) = secrets(n, tag);
    if let Some(what) = marks::of_secrets(shape) {
        ctx.exercised(what, "mcp", Some(task_label(n)));
    }
    let task = RemoteTask::new(n, owner, remote_id, driver_data, t);
    ctx.history.label(&task.remote_id, n);
    ctx.history.record(
        "mcp",
        Some(task_label(n)),
        Seen::RemoteCreated {
            n,
            remote_id: task.remote_id.clone(),
            driver_data: task.driver_data.clone(),
        },
    );
    let hosted = Hosted {
        task: task.clone(),
        tally: AnswerTally::default(),
    };
    st.tasks.insert(task.remote_id.clone(), hosted);
    task
}

/// A status poll: a 503 while a remote-errors fault lasts, else the task's report; either way
/// counted towards "degraded twice".
fn status(ctx: &Ctx, st: &mut McpState, remote_id: &str, t: u64) -> McpAnswer {
    let answer = faults::transient_error(ctx, st, t, remote_id)
        .unwrap_or_else(|| served_view(ctx, st, remote_id, t));
    if let Some(hosted) = st.tasks.get_mut(remote_id) {
        let unavailable = matches!(answer, McpAnswer::Unavailable(_));
        if hosted.tally.polled(unavailable) {
            let label = Some(task_label(hosted.task.n));
            ctx.exercised(WorkloadMark::RemoteDegradedTwice, "mcp", label);
        }
    }
    answer
}

/// A cancel, answered in the task's planned cancel style ([`RemoteTask::cancel`]): the task's
/// report, or a legacy server's "already terminal" error.
fn cancel(ctx: &Ctx, st: &mut McpState, remote_id: &str, t: u64) -> McpAnswer {
    if let Some(e) = faults::transient_error(ctx, st, t, remote_id) {
        return e;
    }
    let Some(hosted) = st.tasks.get_mut(remote_id) else {
        return served_view(ctx, st, remote_id, t);
    };
    let task = &mut hosted.task;
    let Some(plan) = ctx.plan.task(task.n) else {
        return served_view(ctx, st, remote_id, t);
    };
    let label = Some(task_label(task.n));
    if matches!(
        view_at(task, plan, t),
        View::Scripted(ScriptStatus::Cancelled, _)
    ) {
        ctx.exercised(
            WorkloadMark::CancelAfterRemoteCancelled,
            "mcp",
            label.clone(),
        );
    }
    match task.cancel(plan, t) {
        CancelTaken::Rejected => {
            ctx.exercised(WorkloadMark::CancelAlreadyTerminal, "mcp", label);
            return McpAnswer::Rejected(format!("-32602: task {remote_id} is already terminal"));
        }
        CancelTaken::Acknowledged => ctx.exercised(WorkloadMark::CancelAcknowledged, "mcp", label),
        CancelTaken::AlreadyEnded | CancelTaken::Cancelled => {}
    }
    served_view(ctx, st, remote_id, t)
}

/// An answer: taken, and recorded as received; it answers the task's open question if it
/// names it, and is ignored otherwise ([`RemoteTask::answer`]).
fn take_answer(
    ctx: &Ctx,
    st: &mut McpState,
    remote_id: &str,
    request_id: String,
    text: String,
    t: u64,
) -> McpAnswer {
    let Some(hosted) = st.tasks.get_mut(remote_id) else {
        return McpAnswer::Unknown;
    };
    let task = &mut hosted.task;
    let asked = ctx
        .plan
        .task(task.n)
        .and_then(|plan| task.answer(plan, &request_id, t))
        .is_some();
    let label = Some(task_label(task.n));
    ctx.exercised(
        if asked {
            WorkloadMark::AnswerTaken
        } else {
            WorkloadMark::AnswerIgnored
        },
        "mcp",
        label.clone(),
    );
    ctx.history.record(
        "mcp",
        label,
        Seen::RemoteAnswered {
            remote_id: remote_id.to_owned(),
            request_id,
            text,
            asked,
        },
    );
    McpAnswer::AnswerTaken
}

/// The task's report at `t`, with the marks its view and its run of statuses exercise.
fn served_view(ctx: &Ctx, st: &mut McpState, remote_id: &str, t: u64) -> McpAnswer {
    let Some(hosted) = st.tasks.get_mut(remote_id) else {
        return McpAnswer::Unknown;
    };
    let Some(plan) = ctx.plan.task(hosted.task.n) else {
        return McpAnswer::Unknown;
    };
    let view = view_at(&hosted.task, plan, t);
    let label = Some(task_label(hosted.task.n));
    let echo_marks = marks::of_echo(&view);
    for what in marks::of_view(&view).into_iter().chain(echo_marks) {
        ctx.exercised(what, "mcp", label.clone());
    }
    if let Some(what) = view.status().and_then(|status| hosted.tally.served(status)) {
        ctx.exercised(what, "mcp", label);
    }
    report(&hosted.task, plan, view)
}
