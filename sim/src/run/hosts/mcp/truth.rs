//! Each remote task's truth at the end of a run: what a fault-free status poll would answer,
//! which the checker expects the engine's last delivery to match.

use super::model::view_at;
use super::report::report;
use super::state::McpState;
use crate::plan::Plan;
use crate::wire::mcp::McpAnswer;

/// What a fault-free status poll of one remote task answers at the end of a run.
#[derive(Clone, PartialEq, Debug)]
pub struct RemoteTruth {
    /// The plan task number of the task's creator.
    pub n: u32,
    /// The task's remote id.
    pub remote_id: String,
    /// The poll's answer ([`McpAnswer::Unknown`] for a task the server forgot).
    pub answer: McpAnswer,
    /// Whether a server restart forgot the task.
    pub forgotten: bool,
}

impl McpState {
    /// What a fault-free poll of every remote task would answer at `t_ms`: the tasks the
    /// server keeps, by remote id (those of no task of `plan` left out), then the tasks a
    /// restart forgot, by remote id.
    pub fn truths(&self, plan: &Plan, t_ms: u64) -> Vec<RemoteTruth> {
        self.tasks
            .values()
            .map(|hosted| &hosted.task)
            .filter_map(|task| {
                let task_plan = plan.task(task.n)?;
                let answer = report(task, task_plan, view_at(task, task_plan, t_ms));
                Some(RemoteTruth {
                    n: task.n,
                    remote_id: task.remote_id.clone(),
                    answer,
                    forgotten: false,
                })
            })
            .chain(self.forgotten.iter().map(|(id, n)| RemoteTruth {
                n: *n,
                remote_id: id.clone(),
                answer: McpAnswer::Unknown,
                forgotten: true,
            }))
            .collect()
    }
}
