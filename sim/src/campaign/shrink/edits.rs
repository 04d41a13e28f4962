//! The edits shrinking tries: remove a range of entries of one kind, a worker, or weaken one
//! fault. Each returns a new candidate plan; none checks that it still fails.

use crate::plan::fault::Fault;
use crate::plan::{Plan, UserAction};

/// `p` without faults `r`.
pub fn without_faults(p: &Plan, r: std::ops::Range<usize>) -> Plan {
    let mut q = p.clone();
    q.faults.drain(r);
    q
}

/// `p` without user actions `r`.
pub fn without_user(p: &Plan, r: std::ops::Range<usize>) -> Plan {
    let mut q = p.clone();
    q.user.drain(r);
    q
}

/// `p` without tasks `r`, and without the user actions aimed at them.
pub fn without_tasks(p: &Plan, r: std::ops::Range<usize>) -> Plan {
    let mut q = p.clone();
    let gone: Vec<u32> = q.tasks.drain(r).map(|t| t.n).collect();
    q.user.retain(|a| match a {
        UserAction::Cancel { task, .. }
        | UserAction::ForeignCancel { task, .. }
        | UserAction::Requeue { task, .. }
        | UserAction::Answer { task, .. } => !gone.contains(task),
        UserAction::DeleteThread { .. } | UserAction::List { .. } => true,
    });
    q
}

/// `p` without script steps `r`, counting steps across tasks in plan order.
pub fn without_steps(p: &Plan, r: std::ops::Range<usize>) -> Plan {
    let mut q = p.clone();
    let mut i = 0;
    for t in &mut q.tasks {
        let len = t.steps.len();
        let (lo, hi) = (
            r.start.saturating_sub(i).min(len),
            r.end.saturating_sub(i).min(len),
        );
        t.steps.drain(lo..hi);
        i += len;
    }
    q
}

/// Script steps in the plan.
pub fn step_count(p: &Plan) -> usize {
    p.tasks.iter().map(|t| t.steps.len()).sum()
}

/// `p` with one worker less, and without the faults bound to it; `None` at one worker.
pub fn fewer_workers(p: &Plan) -> Option<Plan> {
    if p.workers <= 1 {
        return None;
    }
    let mut q = p.clone();
    q.workers -= 1;
    let workers = q.workers;
    q.faults
        .retain(|f| f.kind.target().worker().is_none_or(|w| w < workers));
    Some(q)
}

/// Milder versions of fault `i`: shorter, then rarer or gentler.
pub fn weaker(p: &Plan, i: usize) -> Vec<Plan> {
    let f = &p.faults[i];
    let mut out = Vec::new();
    let mut with = |fault: Fault| {
        let mut q = p.clone();
        q.faults[i] = fault;
        out.push(q);
    };
    if f.for_ms >= 2_000 {
        with(Fault {
            for_ms: f.for_ms / 2,
            ..f.clone()
        });
    }
    if let Some(kind) = f.kind.milder() {
        with(Fault { kind, ..f.clone() });
    }
    out
}
