//! Acknowledged submits (DOMAIN §7): a submit the API acknowledged — with the task's id, or
//! with "saving it was not confirmed … do not submit it again" — is never forgotten: its
//! remote task ends up tracked. A submit answered "not started … submitting again is safe"
//! never becomes a tracked task.
//!
//! Read from what the user saw (the submit's answer) and from the store's answers to the
//! handle writes (recorded as the row's insert: the moment the task became tracked). The user
//! host never crashes and a plan's store outages are shorter than the submit grace, so every
//! acknowledged submit's handle must be recorded by the end of the run; a handle recorded too
//! late — after its intent was ended as untracked — is never recorded and trips this too. A
//! handle write the store refused for good (`invalid input`, not dropped) excuses the tracking:
//! the `orphans` rule then wants the remote task cancelled.

use super::facts::Facts;
use super::{Invariant, Verdict};
use crate::history::Seen;
use crate::plan::naming::task_label;

/// What an answer promised about the task.
#[derive(PartialEq, Eq, Debug)]
enum Promise {
    /// 201 or "do not submit it again": the task is tracked.
    Tracked,
    /// "Submitting again is safe": no task exists.
    NotStarted,
    /// Anything else (refused, remote error, duplicate): nothing is promised here.
    Nothing,
}

fn promise(answer: &Result<String, String>) -> Promise {
    match answer {
        Ok(_) => Promise::Tracked,
        Err(e) if e.contains("do not submit it again") => Promise::Tracked,
        Err(e) if e.starts_with("the task was not started") => Promise::NotStarted,
        Err(_) => Promise::Nothing,
    }
}

pub(super) fn check(f: &Facts<'_>, v: &mut Verdict) {
    for (i, e) in f.entries.iter().enumerate() {
        let Seen::SubmitAnswered { n, answer } = &e.event else {
            continue;
        };
        let task_id = f.task_ids.get(n).copied();
        // Tracked by its own row, or by another row the remote server handed the same task.
        let tracked = task_id.is_some_and(|id| f.inserted.contains(id))
            || f.held
                .get(n)
                .is_some_and(|r| f.holder_ids(r).any(|id| f.inserted.contains(id)));
        // A row the store refused for good cannot be tracked: the promise then is the
        // compensating cancel (the `orphans` rule) and the untracked ending on the thread.
        let refused = task_id.is_some_and(|id| f.refused_for_good(id).is_some());
        match (promise(answer), tracked) {
            (Promise::Tracked, false) if !refused => v.push(
                Invariant::Lost,
                Some(task_label(*n)),
                Some(i),
                "the submit was acknowledged but its task was never tracked (its remote task's \
                 id was never saved)",
            ),
            (Promise::Tracked, false) if !told_untracked(f, *n) => v.push(
                Invariant::Lost,
                Some(task_label(*n)),
                Some(i),
                "the store refused an acknowledged submit's row but its thread was never told \
                 the task could not be tracked",
            ),
            (Promise::NotStarted, true) => v.push(
                Invariant::Unexpected,
                Some(task_label(*n)),
                Some(i),
                "the submit was answered \"not started\" but its task was tracked",
            ),
            _ => {}
        }
    }
}

/// Whether task `n`'s thread was offered the untracked ending (a launch whose prompt says the
/// task could not be tracked), or its thread was deleted and nothing can reach it.
fn told_untracked(f: &Facts<'_>, n: u32) -> bool {
    let Some(&task_id) = f.task_ids.get(&n) else {
        return true;
    };
    f.thread_deleted(n)
        || f.launches
            .iter()
            .any(|l| l.task_id == task_id && l.prompt.contains("could not be tracked"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_promise_what_they_say() {
        assert_eq!(promise(&Ok("tsk_1".into())), Promise::Tracked);
        let unconfirmed = "the task was started but saving it was not confirmed (x); it is saved \
                           and reported in this thread once the store answers, so do not submit \
                           it again";
        assert_eq!(promise(&Err(unconfirmed.into())), Promise::Tracked);
        let not_started = "the task was not started: the task store is unavailable: down";
        assert_eq!(promise(&Err(not_started.into())), Promise::NotStarted);
        assert_eq!(
            promise(&Err(
                "the remote server did not accept the task: quota".into()
            )),
            Promise::Nothing
        );
    }
}
