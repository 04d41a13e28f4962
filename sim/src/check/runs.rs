//! Bounded runs (DOMAIN §3, issue 11 item 3): a run the engine saw still going long after
//! `max_run_life` is interrupted at once by the lane that saw it, so a run that never ends
//! cannot hold its task's notifications, and its thread, for ever.
//!
//! Read from the ports' record: a lookup that answered `pending` or `running` for a run older
//! than `max_run_life` plus [`MARGIN_SECS`] must be followed by the same lane's interrupt of
//! that run, unless the lane's worker restarted (crashed) first. A run's age is counted by the
//! world's clock from when the engine could first know it: the first accepted `launched` write
//! of its task after a launch answer named the run to a worker (a run whose launch answers
//! were lost is only known from then, and a launch whose write the store refused — its lane
//! lost the lease meanwhile — told the engine nothing), or, without such a write in the
//! history, from the last launch answer that named the run to the looking lane (a claim that
//! relaunches under the same key and is answered with a run created long ago looks at it while
//! it waits for its end, before any write: it learned of the run just then), or else from the
//! first launch answer that named it.
//!
//! A lane that stalls right after its lookup (a pause fault of that lane fires within a lease
//! of it) is excused: waking up, it may have too little of its lease left to call out, and the
//! run is then interrupted by the next claimer, whose own lookup this rule checks in turn.

use super::facts::Facts;
use super::{Invariant, Verdict};
use crate::history::write_action::WriteAction;
use crate::history::Seen;
use crate::plan::fault::Freezes;
use crate::plan::naming::{lane_name, worker_host};
use crate::plan::timing::{LEASE_MS, MAX_RUN_LIFE_SECS};
use std::collections::BTreeMap;

/// Slack over `max_run_life` before a run counts as too old: the engine measures a run's age
/// from the write after its launch, on a clock that may be skewed by a few seconds either way.
const MARGIN_SECS: u64 = 20;

pub(super) fn check(f: &Facts<'_>, v: &mut Verdict) {
    let limit_us = (MAX_RUN_LIFE_SECS + MARGIN_SECS) * 1_000_000;
    // Run → when a launch answer first named it, and when the engine first wrote it down.
    let mut named_at: BTreeMap<&str, u64> = BTreeMap::new();
    // (lane, run) → when a launch answer last named the run to that lane.
    let mut named_to_lane: BTreeMap<(&str, &str), u64> = BTreeMap::new();
    let mut written_at: BTreeMap<&str, u64> = BTreeMap::new();
    for (i, e) in f.entries.iter().enumerate() {
        if let Seen::PortLaunch { lane, outcome, .. } = &e.event {
            if let Some(run) = outcome.strip_prefix("started:") {
                named_at.entry(run).or_insert(e.at_us);
                named_to_lane.insert((lane.as_str(), run), e.at_us);
            }
        }
        if let Seen::StoreWrite { rows, .. } = &e.event {
            for row in rows
                .iter()
                .filter(|r| r.action == WriteAction::Launched && r.outcome.is_ok())
            {
                for run in named_at.keys() {
                    if f.runs.get(run).is_some_and(|r| r.task_id == row.task_id) {
                        written_at.entry(run).or_insert(e.at_us);
                    }
                }
            }
        }
        let Seen::PortLookup {
            lane, run, outcome, ..
        } = &e.event
        else {
            continue;
        };
        if outcome != "pending" && outcome != "running" {
            continue;
        }
        let known = written_at
            .get(run.as_str())
            .or_else(|| named_to_lane.get(&(lane.as_str(), run.as_str())))
            .or_else(|| named_at.get(run.as_str()));
        let (Some(r), Some(known)) = (f.runs.get(run.as_str()), known) else {
            continue;
        };
        let age_us = e.at_us.saturating_sub(*known);
        if age_us <= limit_us {
            continue;
        }
        let host = lane.split('/').next().unwrap_or(lane);
        let answered = f.entries[i + 1..]
            .iter()
            .find_map(|later| match &later.event {
                Seen::PortInterrupt {
                    lane: l, run: r, ..
                } if l == lane && r == run => Some(true),
                Seen::HostStarted if later.host == host => Some(false),
                _ => None,
            });
        if answered.is_none() && !paused_after(f, i, lane) {
            v.push(
                Invariant::Live,
                f.label(r.task_id),
                Some(i),
                format!(
                    "{lane} saw run {run} still {outcome} {} s after a launch named it \
                     (max_run_life {MAX_RUN_LIFE_SECS} s) and never interrupted it",
                    age_us / 1_000_000
                ),
            );
        }
    }
}

/// Whether a pause of `lane` fired within a lease after entry `i`.
fn paused_after(f: &Facts<'_>, i: usize, lane: &str) -> bool {
    let from = f.entries[i].at_us;
    let until = from + LEASE_MS * 1_000;
    f.entries[i + 1..]
        .iter()
        .take_while(|later| later.at_us <= until)
        .any(|later| match &later.event {
            Seen::FaultFired { index } => {
                f.plan
                    .faults
                    .get(*index)
                    .is_some_and(|fault| match fault.kind.excuse().freezes {
                        Freezes::Lane { worker, lane: l } => lane_name(worker, l) == lane,
                        Freezes::Worker(worker) => {
                            lane.starts_with(&format!("{}/", worker_host(worker)))
                        }
                        Freezes::None => false,
                    })
            }
            _ => false,
        })
}

#[cfg(test)]
mod tests {
    use crate::check::test_support::at;
    use crate::check::{check, Invariant};
    use crate::history::write_action::WriteAction;
    use crate::history::{Entry, LaunchAnswer, RowWrite, Seen};
    use crate::plan::generate::{generate, Knobs};
    use tasklatch_core::lease::{LeaseKind, Refusal};
    use tasklatch_core::status::NotifyStatus;

    /// Run 1 launched at 0 s: the gateway's answer and lane `worker-0/0`'s port record.
    fn launched_run_one() -> Vec<Entry> {
        vec![
            at(
                0,
                "gateway",
                Seen::LaunchServed {
                    key: "task:t1:1:0".into(),
                    owner: "o".into(),
                    thread: "th".into(),
                    prompt: "p".into(),
                    answer: LaunchAnswer::Started {
                        run: "run-1".into(),
                    },
                    created_run: Some("run-1".into()),
                    dropped: false,
                },
            ),
            at(
                0,
                "worker-0",
                Seen::PortLaunch {
                    lane: "worker-0/0".into(),
                    key: "task:t1:1:0".into(),
                    outcome: "started:run-1".into(),
                    started_us: 0,
                },
            ),
        ]
    }

    /// Run 1 is launched at 0 s and looked up still running at `seen` s by lane `worker-0/0`,
    /// followed by `then`.
    fn stuck_verdicts(seen: u64, then: Vec<Entry>) -> Vec<String> {
        let plan = generate(0, &Knobs::default());
        let mut entries = launched_run_one();
        entries.extend([at(
            seen,
            "worker-0",
            Seen::PortLookup {
                lane: "worker-0/0".into(),
                run: "run-1".into(),
                outcome: "running".into(),
                started_us: 0,
            },
        )]);
        entries.extend(then);
        check(&plan, &entries)
            .violations
            .into_iter()
            .filter(|v| v.invariant == Invariant::Live && v.detail.contains("interrupted"))
            .map(|v| v.detail)
            .collect()
    }

    fn interrupt(secs: u64, lane: &str) -> Entry {
        at(
            secs,
            "worker-0",
            Seen::PortInterrupt {
                lane: lane.into(),
                run: "run-1".into(),
                outcome: "interrupted".into(),
                started_us: 0,
            },
        )
    }

    #[test]
    fn a_run_seen_going_long_past_max_run_life_must_be_interrupted_by_that_lane() {
        assert_eq!(stuck_verdicts(60, vec![]).len(), 1, "never interrupted");
        assert_eq!(
            stuck_verdicts(60, vec![interrupt(60, "worker-0/1")]).len(),
            1,
            "another lane's interrupt is not this lane's"
        );
        assert!(stuck_verdicts(60, vec![interrupt(60, "worker-0/0")]).is_empty());
        assert!(
            stuck_verdicts(60, vec![at(61, "worker-0", Seen::HostStarted)]).is_empty(),
            "the lane's worker crashed before it could"
        );
        assert!(
            stuck_verdicts(40, vec![]).is_empty(),
            "within max_run_life and its margin"
        );
    }

    fn launched_write(secs: u64, accepted: bool) -> Entry {
        let outcome = if accepted {
            Ok((1, 0, NotifyStatus::Dispatched))
        } else {
            Err(Refusal::LeaseNotHeld)
        };
        at(
            secs,
            "db",
            Seen::StoreWrite {
                lease: LeaseKind::Notify,
                rows: vec![RowWrite {
                    task_id: "t1".into(),
                    token: 1,
                    version: Some(1),
                    at_us: 0,
                    action: WriteAction::Launched,
                    outcome,
                }],
                dropped: false,
            },
        )
    }

    /// Seed 189 (once hostile task names were drawn): the lane that first launched the run
    /// lost its lease before writing it down (refused), and another lane's launch of the same
    /// key wrote it 24 s later — the engine's clock for the run starts there.
    #[test]
    fn a_runs_age_counts_from_the_first_accepted_write_of_its_launch() {
        let relaunched = |accepted: bool| {
            let plan = generate(0, &Knobs::default());
            let mut entries = launched_run_one();
            entries.extend([launched_write(19, false), launched_write(24, accepted)]);
            entries.push(at(
                60,
                "worker-0",
                Seen::PortLookup {
                    lane: "worker-0/0".into(),
                    run: "run-1".into(),
                    outcome: "running".into(),
                    started_us: 0,
                },
            ));
            check(&plan, &entries)
                .violations
                .into_iter()
                .filter(|v| v.invariant == Invariant::Live)
                .count()
        };
        assert_eq!(relaunched(true), 0, "36 s after the engine wrote it down");
        assert_eq!(
            relaunched(false),
            1,
            "never written: 60 s after it was named"
        );
    }

    fn lookup(secs: u64, lane: &str) -> Entry {
        at(
            secs,
            "worker-0",
            Seen::PortLookup {
                lane: lane.into(),
                run: "run-1".into(),
                outcome: "running".into(),
                started_us: 0,
            },
        )
    }

    fn live_count(plan: &crate::plan::Plan, entries: &[Entry]) -> usize {
        check(plan, entries)
            .violations
            .into_iter()
            .filter(|v| v.invariant == Invariant::Live && v.detail.contains("interrupted"))
            .count()
    }

    #[test]
    fn a_lane_paused_right_after_its_lookup_is_excused() {
        let mut plan = generate(0, &Knobs::default());
        plan.faults.push(crate::plan::fault::Fault {
            at_ms: 59_000,
            for_ms: 10_000,
            kind: crate::plan::fault::FaultKind::Pause { worker: 0, lane: 0 },
        });
        let index = plan.faults.len() - 1;
        let mut entries = launched_run_one();
        entries.push(lookup(60, "worker-0/0"));
        assert_eq!(live_count(&plan, &entries), 1, "not paused: must interrupt");
        entries.push(at(60, "worker-0", Seen::FaultFired { index }));
        assert_eq!(live_count(&plan, &entries), 0, "paused past its margin");
    }

    #[test]
    fn a_relaunch_answered_with_an_old_run_counts_from_that_answer_for_its_lane() {
        let plan = generate(0, &Knobs::default());
        let mut entries = launched_run_one();
        entries.push(at(
            58,
            "worker-0",
            Seen::PortLaunch {
                lane: "worker-0/1".into(),
                key: "task:t1:1:0".into(),
                outcome: "started:run-1".into(),
                started_us: 0,
            },
        ));
        entries.push(lookup(59, "worker-0/1"));
        assert_eq!(
            live_count(&plan, &entries),
            0,
            "that lane learned of it at 58 s"
        );
        entries.push(lookup(59, "worker-0/0"));
        assert_eq!(
            live_count(&plan, &entries),
            1,
            "the first lane knew it since 0 s"
        );
    }
}
