//! Isolation and sealing: no cross-owner listing or cancel, no remote cancel nobody asked for
//! (a submit's compensating cancel included, when the task's row was stored after all), every
//! requested cancel reaches the remote server, and no secret (nor a piece of one: see [`Seal`])
//! in any output.

use super::facts::Facts;
use super::seal::Seal;
use super::{Invariant, Verdict};
use crate::history::{RemoteOp, Seen};
use crate::plan::naming::{owner_name, task_label, thread_name, USER_HOST};
use std::collections::BTreeMap;
use tasklatch_core::policy::MAX_CONTEXT_TASKS;
use tasklatch_core::store::CancelOutcome;

pub(super) fn check(f: &Facts<'_>, v: &mut Verdict) {
    listings(f, v);
    foreign_cancels(f, v);
    remote_cancels(f, v);
    compensations(f, v);
    secrets(f, v);
}

/// A submit's compensating cancel (a remote cancel by the user's own engine) is only for a task
/// no stored row holds: otherwise the row lives on and later reports the cancel the engine
/// caused, for a task its user was told had failed. (A row stored only after the cancel — the
/// duplicate-handle quirk handing the cancelled task to a later submit — is not its doing.)
fn compensations(f: &Facts<'_>, v: &mut Verdict) {
    let mut stored_at: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, e) in f.entries.iter().enumerate() {
        if let Seen::StoreInsert {
            task_id,
            outcome: Ok(_),
            ..
        } = &e.event
        {
            stored_at.entry(task_id.as_str()).or_insert(i);
        }
    }
    for (i, e) in f.entries.iter().enumerate() {
        let Seen::PortRemote {
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
        if f.holder_ids(remote_id)
            .any(|id| stored_at.get(id).is_some_and(|at| *at < i))
        {
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

/// Listings and run contexts hold only the caller's own tasks of the thread named (the run
/// context at most `MAX_CONTEXT_TASKS`).
fn listings(f: &Facts<'_>, v: &mut Verdict) {
    for (i, e) in f.entries.iter().enumerate() {
        let (owner, thread, ids, what): (_, _, Vec<&str>, _) = match &e.event {
            Seen::Listed {
                owner,
                thread,
                answer: Ok(tasks),
            } => (
                owner,
                thread,
                tasks.iter().map(|t| t.task_id.as_str()).collect(),
                "listed",
            ),
            Seen::ContextRead {
                owner,
                thread,
                answer: Ok(tasks),
            } => {
                if tasks.len() > MAX_CONTEXT_TASKS {
                    v.push(
                        Invariant::Isolated,
                        None,
                        Some(i),
                        format!("a run context of {} tasks", tasks.len()),
                    );
                }
                let ids = tasks.iter().map(|t| t.task_id.as_str()).collect();
                (owner, thread, ids, "was given in a run context")
            }
            _ => continue,
        };
        for id in ids {
            if scope_of(f, id) != Some((owner.clone(), thread.clone())) {
                v.push(
                    Invariant::Isolated,
                    f.label(id),
                    Some(i),
                    format!("{owner} {what} a task outside its own {thread}"),
                );
            }
        }
    }
}

fn foreign_cancels(f: &Facts<'_>, v: &mut Verdict) {
    for (i, e) in f.entries.iter().enumerate() {
        if let Seen::CancelAnswered {
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
            Seen::StoreCancel {
                outcome: CancelOutcome::Requested(id),
                ..
            } => {
                requested.entry(id.to_string()).or_insert(i);
            }
            Seen::PortRemote {
                lane,
                remote_id,
                op: RemoteOp::Cancel,
                ..
            } if lane.starts_with("worker-") => {
                let Some(n) = f.n_of_remote.get(remote_id.as_str()) else {
                    continue;
                };
                // Whichever task's row holds the remote id: the duplicate-handle quirk can hand
                // one remote task to two submits, and either insert may win.
                if !f.holder_ids(remote_id).any(|id| requested.contains_key(id)) {
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
        let Some(remote_id) = f.held.get(n) else {
            continue;
        };
        // A cancel requested while the row was an intent whose handle was never saved cannot
        // reach the remote server: the submit's own rules (`acknowledged`, `orphans`) cover it.
        if !f.inserted.contains(task_id.as_str()) {
            continue;
        }
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
            Seen::LaunchServed { prompt, .. } => leaks(prompt),
            Seen::Listed { answer, .. } => {
                leaks(&serde_json::to_string(answer).unwrap_or_default())
            }
            Seen::ContextRead { answer, .. } => {
                leaks(&serde_json::to_string(answer).unwrap_or_default())
            }
            Seen::SubmitAnswered { answer, .. } => leaks(&format!("{answer:?}")),
            Seen::CancelAnswered { answer, .. } => leaks(&format!("{answer:?}")),
            Seen::AnswerAnswered { answer, .. } => leaks(&format!("{answer:?}")),
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

#[cfg(test)]
mod tests {
    use crate::check::{check, Invariant};
    use crate::history::{Entry, RemoteOp, Seen};
    use crate::plan::generate::{generate, Knobs};
    use tasklatch_core::ids::TaskId;
    use tasklatch_core::store::CancelOutcome;

    fn entry(host: &str, event: Seen) -> Entry {
        Entry {
            at_us: 0,
            host: host.into(),
            task: None,
            event,
        }
    }

    /// Task 6's submit creates remote `R`; task 9's submit is handed `R` again (when `reused`),
    /// task 9's row is stored, task 6's refused; task 9 is cancelled and a worker cancels `R`.
    fn unrequested_cancels(reused: bool) -> Vec<String> {
        let plan = generate(0, &Knobs::default());
        let mut events = vec![
            Seen::SubmitSent {
                n: 6,
                task_id: "tsk_6".into(),
            },
            Seen::RemoteCreated {
                n: 6,
                remote_id: "R".into(),
                driver_data: "D".into(),
            },
            Seen::SubmitSent {
                n: 9,
                task_id: "tsk_9".into(),
            },
        ];
        if reused {
            events.push(Seen::RemoteReused {
                n: 9,
                remote_id: "R".into(),
            });
        }
        events.extend([
            Seen::StoreInsert {
                task_id: "tsk_9".into(),
                outcome: Ok(0),
                dropped: false,
            },
            Seen::StoreInsert {
                task_id: "tsk_6".into(),
                outcome: Err("duplicate handle".into()),
                dropped: false,
            },
            Seen::StoreCancel {
                owner: "user-0".into(),
                thread: "user-0-thread-0".into(),
                outcome: CancelOutcome::Requested(TaskId::from("tsk_9")),
                dropped: false,
            },
        ]);
        let mut entries: Vec<Entry> = events.into_iter().map(|e| entry("user", e)).collect();
        entries.push(entry(
            "worker-0",
            Seen::PortRemote {
                lane: "worker-0/0".into(),
                remote_id: "R".into(),
                op: RemoteOp::Cancel,
                started_us: 0,
                answered: true,
            },
        ));
        check(&plan, &entries)
            .violations
            .into_iter()
            .filter(|v| v.invariant == Invariant::Isolated)
            .map(|v| v.detail)
            .collect()
    }

    #[test]
    fn a_remote_cancel_is_attributed_to_the_row_that_holds_the_handle() {
        assert_eq!(unrequested_cancels(true), Vec::<String>::new());
        // Without the record that task 9 holds `R`, nobody asked to cancel it.
        assert_eq!(
            unrequested_cancels(false),
            ["a remote cancel nobody requested"]
        );
    }
}
