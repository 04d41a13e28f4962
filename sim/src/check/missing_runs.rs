//! A missing run is retried, not waited on (DOMAIN §3, `dispatched → retry`): once the
//! launcher reported a dispatched run missing, the engine's next word on that notification is
//! never "still going". Waiting on a run that will never end holds the notification until
//! `max_run_life` — 30 s in the simulation's policy, but 30 minutes in production — a delay no
//! settle bound notices.
//!
//! Read from the ports' lookups and the store's accepted notification writes: after a lookup of
//! run R answered `missing`, the first accepted notification write on R's task must not be
//! `run_pending`. A lookup starts with at least `min_lease_left` of its lease (another rule), so
//! its lane still holds the row when the answer comes, and the next accepted write is that
//! lane's verdict on R, or — the lane stalled — the next claimer's on its own look at R. Runs
//! the launcher ever reported going are left out (a deleted thread's runs go missing while
//! older looks said `running`), and so are answers about a run after an engine interrupted it
//! (the next attempt looks at it again before launching).

use super::facts::Facts;
use super::{Invariant, Verdict};
use crate::history::write_action::WriteAction;
use crate::history::Seen;
use crate::plan::naming::task_label;
use std::collections::{BTreeMap, BTreeSet};
use tasklatch_core::lease::LeaseKind;

pub(super) fn check(f: &Facts<'_>, v: &mut Verdict) {
    let judged = runs_never_seen_going(f);
    let mut interrupted: BTreeSet<&str> = BTreeSet::new();
    // Task id → (entry, run) of a missing answer not yet followed by an accepted write.
    let mut open: BTreeMap<&str, (usize, &str)> = BTreeMap::new();
    for (i, e) in f.entries.iter().enumerate() {
        match &e.event {
            Seen::PortInterrupt { run, .. } => {
                interrupted.insert(run.as_str());
            }
            Seen::PortLookup { run, outcome, .. } if outcome == "missing" => {
                let run = run.as_str();
                if !judged.contains(run) || interrupted.contains(run) {
                    continue;
                }
                if let Some(r) = f.runs.get(run) {
                    open.entry(r.task_id).or_insert((i, r.run));
                }
            }
            Seen::StoreWrite {
                lease: LeaseKind::Notify,
                rows,
                ..
            } => {
                for row in rows.iter().filter(|r| r.outcome.is_ok()) {
                    let Some((at, run)) = open.remove(row.task_id.as_str()) else {
                        continue;
                    };
                    if row.action == WriteAction::RunPending {
                        v.push(
                            Invariant::Live,
                            f.n_of.get(row.task_id.as_str()).map(|n| task_label(*n)),
                            Some(i),
                            format!(
                                "the launcher reported run {run} missing (entry {at}), and the \
                                 store's next accepted notification write kept waiting on it \
                                 (run_pending) instead of retrying"
                            ),
                        );
                    }
                }
            }
            _ => {}
        }
    }
}

/// The runs no lookup ever found going (or ended): each answer was `missing` or an error.
fn runs_never_seen_going<'a>(f: &Facts<'a>) -> BTreeSet<&'a str> {
    let (mut missing, mut seen) = (BTreeSet::new(), BTreeSet::new());
    for e in f.entries {
        if let Seen::PortLookup { run, outcome, .. } = &e.event {
            match outcome.as_str() {
                "missing" => missing.insert(run.as_str()),
                "error" => false,
                _ => seen.insert(run.as_str()),
            };
        }
    }
    missing.difference(&seen).copied().collect()
}

#[cfg(test)]
mod tests {
    use crate::check::test_support::at;
    use crate::check::{check, Invariant};
    use crate::history::write_action::WriteAction;
    use crate::history::{Entry, LaunchAnswer, RowWrite, Seen};
    use crate::plan::generate::{generate, Knobs};
    use tasklatch_core::lease::LeaseKind;
    use tasklatch_core::status::NotifyStatus;

    /// Run 1 of task `t1` created at 0 s, looked up at 10 s (`outcome`), then the store
    /// accepts a notification write `action` at 11 s.
    fn history(outcome: &str, action: WriteAction) -> Vec<Entry> {
        let served = Seen::LaunchServed {
            key: "task:t1:1:0".into(),
            owner: "o".into(),
            thread: "th".into(),
            prompt: "p".into(),
            answer: LaunchAnswer::Started {
                run: "run-1".into(),
            },
            created_run: Some("run-1".into()),
            dropped: false,
        };
        let lookup = Seen::PortLookup {
            lane: "worker-0/0".into(),
            run: "run-1".into(),
            outcome: outcome.into(),
            started_us: 10_000_000,
        };
        let write = Seen::StoreWrite {
            lease: LeaseKind::Notify,
            rows: vec![RowWrite {
                task_id: "t1".into(),
                token: 2,
                version: Some(1),
                at_us: 0,
                action,
                outcome: Ok((1, 0, NotifyStatus::Dispatched)),
            }],
            dropped: false,
        };
        vec![
            at(0, "gateway", served),
            at(10, "worker-0", lookup),
            at(11, "db", write),
        ]
    }

    fn waited_on(entries: &[Entry]) -> usize {
        let plan = generate(0, &Knobs::default());
        let verdict = check(&plan, entries);
        let hits = verdict.violations.iter();
        hits.filter(|v| v.invariant == Invariant::Live && v.detail.contains("missing"))
            .count()
    }

    #[test]
    fn a_missing_run_must_be_retried_not_waited_on() {
        assert_eq!(waited_on(&history("missing", WriteAction::RunPending)), 1);
        assert_eq!(waited_on(&history("missing", WriteAction::RunFailed)), 0);
        assert_eq!(waited_on(&history("running", WriteAction::RunPending)), 0);
    }

    #[test]
    fn a_run_once_seen_going_or_interrupted_is_not_judged() {
        let mut seen_going = history("missing", WriteAction::RunPending);
        let earlier = Seen::PortLookup {
            lane: "worker-0/0".into(),
            run: "run-1".into(),
            outcome: "running".into(),
            started_us: 5_000_000,
        };
        seen_going.insert(1, at(5, "worker-0", earlier));
        assert_eq!(waited_on(&seen_going), 0);
        let mut interrupted = history("missing", WriteAction::RunPending);
        let interrupt = Seen::PortInterrupt {
            lane: "worker-0/0".into(),
            run: "run-1".into(),
            outcome: "error".into(),
            started_us: 5_000_000,
        };
        interrupted.insert(1, at(5, "worker-0", interrupt));
        assert_eq!(waited_on(&interrupted), 0);
    }
}
