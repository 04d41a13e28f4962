//! Answers to input requests, seen from the remote server: each question is answered at most
//! once, only with an answer the task's own owner sent, and only after the server asked it.
//! A foreign answer (another owner presenting the victim's thread, task id and request id) is
//! "not found". That answers never reach any other output is the leak check's part (they are
//! secrets, see `Facts::secrets`).

use super::facts::Facts;
use super::{Invariant, Verdict};
use crate::history::Seen;
use crate::plan::naming::{owner_name, task_label};
use crate::wire::mcp::McpAnswer;
use std::collections::BTreeMap;
use tasklatch_core::store::AnswerOutcome;

pub(super) fn check(f: &Facts<'_>, v: &mut Verdict) {
    foreign_answers(f, v);
    received(f, v);
}

/// A foreign answer must be "not found": anything else tells the intruder the task exists.
fn foreign_answers(f: &Facts<'_>, v: &mut Verdict) {
    for (i, e) in f.entries.iter().enumerate() {
        if let Seen::AnswerAnswered {
            n,
            by,
            answer: Ok(outcome),
            ..
        } = &e.event
        {
            let owner = f.plan.task(*n).map(|t| owner_name(t.owner));
            if owner.as_deref() != Some(by.as_str()) && *outcome != AnswerOutcome::NotFound {
                v.push(
                    Invariant::Isolated,
                    Some(task_label(*n)),
                    Some(i),
                    format!("{by} answered another owner's task: {outcome:?}"),
                );
            }
        }
    }
}

/// What the remote server took: at most once per question, from the owner, after the server
/// had asked that question in a report it delivered before the user's answer call returned
/// (the store records an answer only to the question its latest report names).
fn received(f: &Facts<'_>, v: &mut Verdict) {
    let mut returned: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, e) in f.entries.iter().enumerate() {
        if let Seen::AnswerAnswered { text, .. } = &e.event {
            returned.insert(text, i);
        }
    }
    let mut sent: BTreeMap<&str, (usize, &str)> = BTreeMap::new();
    let mut taken: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    for (i, e) in f.entries.iter().enumerate() {
        match &e.event {
            Seen::AnswerSent { by, text, .. } => {
                let answered_at = returned
                    .get(text.as_str())
                    .copied()
                    .unwrap_or(f.entries.len());
                sent.insert(text, (answered_at, by));
            }
            Seen::RemoteAnswered {
                remote_id,
                request_id,
                text,
                ..
            } => {
                let n = f.n_of_remote.get(remote_id.as_str()).copied();
                let label = n.map(task_label);
                if let Some(first) = taken.insert((remote_id, request_id), i) {
                    v.push(
                        Invariant::Duplicated,
                        label.clone(),
                        Some(i),
                        format!("{request_id} answered twice (first at history entry {first})"),
                    );
                }
                let Some((answered_at, by)) = sent.get(text.as_str()).copied() else {
                    v.push(
                        Invariant::Unexpected,
                        label,
                        Some(i),
                        "the remote server got an answer no user sent",
                    );
                    continue;
                };
                let owner = n.and_then(|n| f.plan.task(n)).map(|t| owner_name(t.owner));
                if owner.as_deref() != Some(by) {
                    v.push(
                        Invariant::Isolated,
                        label,
                        Some(i),
                        format!("{by}'s answer reached another owner's task"),
                    );
                } else if !asked_before(f, remote_id, request_id, answered_at) {
                    v.push(
                        Invariant::Unexpected,
                        label,
                        Some(i),
                        format!("an answer to {request_id}, not asked before the user answered"),
                    );
                }
            }
            _ => {}
        }
    }
}

/// Whether the server delivered a report of `remote_id` naming `[request_id]` before entry
/// `before` (a dropped reply reached nobody).
fn asked_before(f: &Facts<'_>, remote_id: &str, request_id: &str, before: usize) -> bool {
    let named = format!("[{request_id}]");
    f.entries[..before].iter().any(|e| match &e.event {
        Seen::RemoteServed {
            remote_id: r,
            answer: McpAnswer::Report(w) | McpAnswer::Created { report: w, .. },
            dropped: false,
            ..
        } => {
            r == remote_id
                && w.input_request
                    .as_ref()
                    .is_some_and(|q| q.decode().contains(&named))
        }
        _ => false,
    })
}
