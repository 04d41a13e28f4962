//! The plan's faults as the `mcp` host applies them: a slow remote delays every call but a
//! submit, remote errors (all tasks, or one task's remote down) answer 503, a restart forgets
//! the legacy side's tasks, and lost replies drop an answer after the work is done.

use super::error_text;
use super::state::McpState;
use crate::plan::fault::{FaultKind, Service};
use crate::plan::naming::task_label;
use crate::plan::CancelStyle;
use crate::plan::FaultMark;
use crate::run::ctx::{now_ms, Ctx};
use crate::run::hosts::lost_replies::lose_reply;
use crate::wire::mcp::{McpAnswer, McpRequest};
use std::time::Duration;

/// Delays `req` by the longest slow-remote fault active now (a submit is never delayed).
pub async fn slow_remote(ctx: &Ctx, req: &McpRequest) {
    let t = now_ms();
    let slow = ctx.active(t, |k| match k {
        FaultKind::SlowRemote { delay_ms } => Some(*delay_ms),
        _ => None,
    });
    let slow: Vec<_> = slow.collect();
    if let Some((index, delay)) = slow.iter().max_by_key(|(_, d)| *d) {
        if !matches!(req, McpRequest::Submit { .. }) {
            ctx.fire(*index, "mcp");
            tokio::time::sleep(Duration::from_millis(*delay)).await;
        }
    }
}

/// A 503 for a call about `remote_id` while a remote-errors fault, or a remote-down fault of
/// its task, is active.
pub fn transient_error(ctx: &Ctx, st: &McpState, t: u64, remote_id: &str) -> Option<McpAnswer> {
    let n = st.tasks.get(remote_id).map(|hosted| hosted.task.n);
    let (index, ()) = ctx
        .active(t, |k| match k {
            FaultKind::RemoteErrors => Some(()),
            FaultKind::RemoteDown { task } if Some(*task) == n => Some(()),
            _ => None,
        })
        .next()?;
    ctx.fire(index, "mcp");
    Some(McpAnswer::Unavailable(error_text::transient_text(
        t, remote_id,
    )))
}

/// Applies the restarts of the plan due by `t`, each once: each forgets every task of the
/// server's legacy side (a task whose cancel style rejects a cancel of a finished task).
pub fn restart(ctx: &Ctx, st: &mut McpState, t: u64) {
    let due: Vec<usize> = ctx
        .active(t, |k| matches!(k, FaultKind::RemoteRestart).then_some(()))
        .map(|(index, ())| index)
        .filter(|index| !st.restarts.contains(index))
        .collect();
    for index in due {
        st.restarts.insert(index);
        let legacy: Vec<String> = st
            .tasks
            .values()
            .map(|hosted| &hosted.task)
            .filter(|task| {
                ctx.plan
                    .task(task.n)
                    .is_some_and(|p| p.cancel_style == CancelStyle::RejectsWhenTerminal)
            })
            .map(|task| task.remote_id.clone())
            .collect();
        for remote_id in legacy {
            let Some(hosted) = st.tasks.remove(&remote_id) else {
                continue;
            };
            let n = hosted.task.n;
            ctx.exercised(FaultMark::RemoteRestartForgets, "mcp", Some(task_label(n)));
            st.forgotten.insert(remote_id, n);
        }
    }
}

/// Whether a lost-replies fault on the remote server drops the answer just served.
pub fn reply_lost(ctx: &Ctx, st: &McpState) -> bool {
    lose_reply(ctx, Service::Mcp, &st.replies)
}
