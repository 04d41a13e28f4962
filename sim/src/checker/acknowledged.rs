//! Acknowledged submits (DOMAIN §7): a submit the API acknowledged — with the task's id, or
//! with "saving it was not confirmed … do not submit it again" — is never forgotten: its
//! remote task ends up tracked. A submit answered "not started … submitting again is safe"
//! never becomes a tracked task.
//!
//! Read from what the user saw (the submit's answer) and from the store's answers to the
//! handle writes (recorded as the row's insert: the moment the task became tracked). The user
//! host never crashes and a plan's store outages are shorter than the submit grace, so every
//! acknowledged submit's handle must be recorded by the end of the run; a handle recorded too
//! late — after its intent was ended as untracked — is never recorded and trips this too.

use super::facts::Facts;
use super::{Invariant, Verdict};
use crate::history::Event;
use crate::naming::task_label;

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
        let Event::SubmitAnswered { n, answer } = &e.event else {
            continue;
        };
        let tracked = f.task_ids.get(n).is_some_and(|id| f.inserted.contains(id));
        match (promise(answer), tracked) {
            (Promise::Tracked, false) => v.push(
                Invariant::Lost,
                Some(task_label(*n)),
                Some(i),
                "the submit was acknowledged but its task was never tracked (its remote task's \
                 id was never saved)",
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
