//! Isolation and sealing: no cross-owner listing or cancel, no remote cancel nobody asked for
//! (a submit's compensating cancel included, when the task's row was stored after all), every
//! requested cancel reaches the remote server, and no secret (nor a piece of one: see [`Seal`])
//! in any output.

use super::facts::Facts;
use super::seal::Seal;
use super::{Invariant, Verdict};
use crate::history::{Event, RemoteOp};
use crate::naming::{owner_name, task_label, thread_name, USER_HOST};
use std::collections::BTreeMap;
use tasklatch_core::store::CancelOutcome;

pub(super) fn check(f: &Facts<'_>, v: &mut Verdict) {
    listings(f, v);
    foreign_cancels(f, v);
    remote_cancels(f, v);
    compensations(f, v);
    secrets(f, v);
}

/// A submit's compensating cancel (a remote cancel by the user's own engine) is only for a task
/// whose row the store never stored: otherwise the row lives on and later reports the cancel
/// the engine caused, for a task its user was told had failed.
fn compensations(f: &Facts<'_>, v: &mut Verdict) {
    for (i, e) in f.entries.iter().enumerate() {
        let Event::PortRemote {
            lane,
            remote_id,
            op: RemoteOp::Cancel,
            ..
        } = &e.event
        else {
            continue;
        };
        if lane != USER_HOST {
            continue;
        }
        let Some(n) = f.n_of_remote.get(remote_id.as_str()) else {
            continue;
        };
        if f.task_ids.get(n).is_some_and(|id| f.inserted.contains(id)) {
            v.push(
                Invariant::Isolated,
                Some(task_label(*n)),
                Some(i),
                "a compensating cancel of a task whose row was stored",
            );
        }
    }
}

fn scope_of(f: &Facts<'_>, task_id: &str) -> Option<(String, String)> {
    let n = f.n_of.get(task_id)?;
    let t = f.plan.task(*n)?;
    Some((owner_name(t.owner), thread_name(t.owner, t.thread)))
}

fn listings(f: &Facts<'_>, v: &mut Verdict) {
    for (i, e) in f.entries.iter().enumerate() {
        if let Event::Listed {
            owner,
            thread,
            answer: Ok(tasks),
        } = &e.event
        {
            for t in tasks {
                if scope_of(f, t.task_id.as_str()) != Some((owner.clone(), thread.clone())) {
                    v.push(
                        Invariant::Isolated,
                        f.label(t.task_id.as_str()),
                        Some(i),
                        format!("{owner} listed a task outside {thread}"),
                    );
                }
            }
        }
    }
}

fn foreign_cancels(f: &Facts<'_>, v: &mut Verdict) {
    for (i, e) in f.entries.iter().enumerate() {
        if let Event::CancelAnswered {
            n,
            by,
            answer: Ok(outcome),
        } = &e.event
        {
            let owner = f.plan.task(*n).map(|t| owner_name(t.owner));
            if owner.as_deref() != Some(by.as_str()) && *outcome != CancelOutcome::NotFound {
                v.push(
                    Invariant::Isolated,
                    Some(task_label(*n)),
                    Some(i),
                    format!("{by} cancelled another owner's task: {outcome:?}"),
                );
            }
        }
    }
}

fn remote_cancels(f: &Facts<'_>, v: &mut Verdict) {
    let mut requested: BTreeMap<String, usize> = BTreeMap::new();
    let mut reached: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, e) in f.entries.iter().enumerate() {
        match &e.event {
            Event::StoreCancel {
                outcome: CancelOutcome::Requested(id),
                ..
            } => {
                requested.entry(id.to_string()).or_insert(i);
            }
            Event::PortRemote {
                lane,
                remote_id,
                op: RemoteOp::Cancel,
                ..
            } if lane.starts_with("worker-") => {
                let Some(n) = f.n_of_remote.get(remote_id.as_str()) else {
                    continue;
                };
                let Some(task_id) = f.task_ids.get(n) else {
                    continue;
                };
                if !requested.contains_key(*task_id) {
                    v.push(
                        Invariant::Isolated,
                        Some(task_label(*n)),
                        Some(i),
                        "a remote cancel nobody requested",
                    );
                }
                reached.entry(remote_id.as_str()).or_default().push(i);
            }
            _ => {}
        }
    }
    for (task_id, at) in requested {
        let Some(n) = f.n_of.get(task_id.as_str()) else {
            continue;
        };
        let Some((remote_id, _)) = f.remote.get(n) else {
            continue;
        };
        if reached
            .get(remote_id)
            .is_none_or(|calls| calls.iter().all(|c| *c <= at))
        {
            v.push(
                Invariant::Live,
                Some(task_label(*n)),
                Some(at),
                "a requested cancel never reached the remote server",
            );
        }
    }
}

fn secrets(f: &Facts<'_>, v: &mut Verdict) {
    let seal = Seal::new(&f.secrets, &f.answers);
    let leaks = |text: &str| seal.leaks(text);
    for (i, e) in f.entries.iter().enumerate() {
        let output = match &e.event {
            Event::LaunchServed { prompt, .. } => leaks(prompt),
            Event::Listed { answer, .. } => {
                leaks(&serde_json::to_string(answer).unwrap_or_default())
            }
            Event::SubmitAnswered { answer, .. } => leaks(&format!("{answer:?}")),
            Event::CancelAnswered { answer, .. } => leaks(&format!("{answer:?}")),
            Event::AnswerAnswered { answer, .. } => leaks(&format!("{answer:?}")),
            _ => false,
        };
        if output {
            v.push(
                Invariant::Sealed,
                e.task.clone(),
                Some(i),
                "a secret reached a user-visible output",
            );
        }
    }
}
