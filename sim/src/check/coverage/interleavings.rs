//! Coverage of the risky interleavings the rules exist for (issue 29 item 3), read from a
//! finished history — they are orders of events, which no single host sees:
//!
//! - [`WorkloadMark::PollNewsUnderNotifyLease`]: a poll write opened a new version of a task
//!   while another worker held a live notification lease on it;
//! - [`WorkloadMark::CallWithLittleLeaseLeft`]: a launch or run lookup started in the last
//!   [`LITTLE_LEFT_MS`] before its lease's `min_lease_left` margin;
//! - [`WorkloadMark::AnswerRepeated`]: an owner answered the same question of a task twice;
//! - [`WorkloadMark::TwoRunsOneKey`]: a thread's runs were listed while one key had two runs;
//! - [`WorkloadMark::CancelRepeatedBeforeWork`], [`WorkloadMark::CancelRepeatedDuringWork`],
//!   [`WorkloadMark::CancelRepeatedAfterWork`]: a cancel request answered "already requested"
//!   before the cancel loop claimed the task, while its cancel work was claimed but not ended,
//!   or — "already requested" or "already finished" — after an accepted write ended it.

use crate::history::{parse_key, Entry, Seen};
use crate::plan::timing::{sim_policy, LEASE_MS};
use crate::plan::WorkloadMark;
use std::collections::{BTreeMap, BTreeSet};
use tasklatch_core::lease::LeaseKind;
use tasklatch_core::store::CancelOutcome;

/// How close to its margin a call must start to count as having little lease left.
const LITTLE_LEFT_MS: u64 = 3_000;

/// The interleavings of [`crate::check::coverage::interleavings`] that `entries` show.
pub fn interleavings(entries: &[Entry]) -> BTreeSet<WorkloadMark> {
    let mut seen = Interleavings::default();
    for e in entries {
        seen.observe(e);
    }
    seen.marks
}

/// What the walk over a history keeps.
#[derive(Default)]
struct Interleavings<'a> {
    marks: BTreeSet<WorkloadMark>,
    /// (task id, poll token) → the claiming worker.
    poll_claimer: BTreeMap<(&'a str, u64), &'a str>,
    /// Task id → (worker, grant µs) of its live notification lease.
    notify_held: BTreeMap<&'a str, (&'a str, u64)>,
    /// Task id → the event version of its last accepted write.
    versions: BTreeMap<&'a str, u64>,
    /// Run → task id.
    run_task: BTreeMap<&'a str, &'a str>,
    /// (task, request id, owner) answered.
    answered: BTreeSet<(u32, &'a str, &'a str)>,
    /// Key → (thread, runs created).
    key_runs: BTreeMap<&'a str, (&'a str, u32)>,
    /// Tasks the cancel loop claimed.
    cancel_claimed: BTreeSet<&'a str>,
    /// Tasks whose cancel work an accepted write ended.
    cancel_ended: BTreeSet<&'a str>,
}

impl<'a> Interleavings<'a> {
    fn observe(&mut self, e: &'a Entry) {
        match &e.event {
            Seen::StoreClaim {
                lease,
                worker,
                grants,
                ..
            } => {
                for g in grants {
                    let id = g.task_id.as_str();
                    match lease {
                        LeaseKind::Poll => {
                            self.poll_claimer.insert((id, g.token), worker);
                        }
                        LeaseKind::Notify => {
                            self.notify_held.insert(id, (worker, e.at_us));
                        }
                        LeaseKind::Cancel => {
                            self.cancel_claimed.insert(id);
                        }
                    }
                }
            }
            Seen::StoreWrite { lease, rows, .. } => self.writes(*lease, rows, e.at_us),
            Seen::PortLaunch {
                key, started_us, ..
            } => {
                if let Some((id, _, _)) = parse_key(key) {
                    self.call(id, *started_us);
                }
            }
            Seen::PortLookup {
                run, started_us, ..
            } => {
                if let Some(id) = self.run_task.get(run.as_str()).copied() {
                    self.call(id, *started_us);
                }
            }
            _ => self.users_and_runs(&e.event),
        }
    }

    /// Accepted writes: a poll's news under another worker's live notification lease; a
    /// notification write gives its lease back.
    fn writes(&mut self, lease: LeaseKind, rows: &'a [crate::history::RowWrite], at_us: u64) {
        for r in rows {
            let Ok((version, _, _)) = r.outcome else {
                continue;
            };
            let id = r.task_id.as_str();
            let before = self.versions.insert(id, version);
            match lease {
                LeaseKind::Poll if before.is_some_and(|b| version > b) => {
                    let poller = self.poll_claimer.get(&(id, r.token));
                    let live = self.notify_held.get(id).filter(|(holder, granted)| {
                        Some(holder) != poller && at_us < granted + LEASE_MS * 1_000
                    });
                    if live.is_some() {
                        self.marks.insert(WorkloadMark::PollNewsUnderNotifyLease);
                    }
                }
                LeaseKind::Notify => {
                    self.notify_held.remove(id);
                }
                LeaseKind::Cancel if r.action.ends_cancel() => {
                    self.cancel_ended.insert(id);
                }
                _ => {}
            }
        }
    }

    /// A launch or lookup for task `id` started at `started_us`.
    fn call(&mut self, id: &str, started_us: u64) {
        let Some((_, granted)) = self.notify_held.get(id) else {
            return;
        };
        let margin_at =
            granted + (LEASE_MS - sim_policy().min_lease_left.as_millis() as u64) * 1_000;
        if started_us < margin_at && started_us + LITTLE_LEFT_MS * 1_000 >= margin_at {
            self.marks.insert(WorkloadMark::CallWithLittleLeaseLeft);
        }
    }

    /// Users' repeated answers and cancels; runs created and listed.
    fn users_and_runs(&mut self, event: &'a Seen) {
        let mark = match event {
            Seen::AnswerSent {
                n, by, request_id, ..
            } => (!self.answered.insert((*n, request_id, by)))
                .then_some(WorkloadMark::AnswerRepeated),
            Seen::LaunchServed {
                key,
                thread,
                created_run: Some(run),
                ..
            } => {
                if let Some((id, _, _)) = parse_key(key) {
                    self.run_task.insert(run, id);
                }
                self.key_runs.entry(key).or_insert((thread, 0)).1 += 1;
                None
            }
            Seen::CancelAnswered {
                answer: Ok(outcome),
                ..
            } => self.repeat_cancel_mark(outcome),
            Seen::RunsListed { thread, .. } => {
                let mut held = self.key_runs.values();
                held.any(|(t, runs)| t == thread && *runs >= 2)
                    .then_some(WorkloadMark::TwoRunsOneKey)
            }
            _ => None,
        };
        self.marks.extend(mark);
    }
}

impl Interleavings<'_> {
    /// Where the task's cancel work stood when a repeated request met it, if `outcome` answered
    /// one: "already requested", or "already finished" after the task's cancel work ended.
    fn repeat_cancel_mark(&self, outcome: &CancelOutcome) -> Option<WorkloadMark> {
        match outcome {
            CancelOutcome::AlreadyRequested(id) if self.cancel_ended.contains(id.as_str()) => {
                Some(WorkloadMark::CancelRepeatedAfterWork)
            }
            CancelOutcome::AlreadyRequested(id) if self.cancel_claimed.contains(id.as_str()) => {
                Some(WorkloadMark::CancelRepeatedDuringWork)
            }
            CancelOutcome::AlreadyRequested(_) => Some(WorkloadMark::CancelRepeatedBeforeWork),
            CancelOutcome::AlreadyFinished(id) if self.cancel_ended.contains(id.as_str()) => {
                Some(WorkloadMark::CancelRepeatedAfterWork)
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::test_support::at;
    use crate::history::write_action::WriteAction;
    use crate::history::{Grant, RowWrite};
    use tasklatch_core::status::NotifyStatus;

    fn claim(secs: u64, lease: LeaseKind, worker: &str, token: u64) -> Entry {
        let grants = vec![Grant {
            task_id: "t1".into(),
            token,
            expires_us: 0,
        }];
        let event = Seen::StoreClaim {
            lease,
            worker: worker.into(),
            grants,
            dropped: false,
        };
        at(secs, "db", event)
    }

    fn poll_write(secs: u64, token: u64, version: u64) -> Entry {
        let row = RowWrite {
            task_id: "t1".into(),
            token,
            version: None,
            at_us: 0,
            action: WriteAction::ApplyPoll,
            outcome: Ok((version, 0, NotifyStatus::Pending)),
        };
        let event = Seen::StoreWrite {
            lease: LeaseKind::Poll,
            rows: vec![row],
            dropped: false,
        };
        at(secs, "db", event)
    }

    #[test]
    fn news_under_another_workers_live_notify_lease_is_marked() {
        let history = |notifier: &str, write_at: u64| {
            let entries = vec![
                poll_write(1, 0, 1),
                claim(10, LeaseKind::Notify, notifier, 1),
                claim(11, LeaseKind::Poll, "worker-1", 7),
                poll_write(write_at, 7, 2),
            ];
            interleavings(&entries).contains(&WorkloadMark::PollNewsUnderNotifyLease)
        };
        assert!(history("worker-0", 12), "another worker's live lease");
        assert!(!history("worker-1", 12), "the poller's own lease");
        assert!(!history("worker-0", 26), "the lease expired at 25 s");
    }

    #[test]
    fn a_launch_just_before_the_margin_has_little_lease_left() {
        let launch = |started_s: u64| {
            let event = Seen::PortLaunch {
                lane: "worker-0/0".into(),
                key: "task:t1:1:0".into(),
                outcome: "busy".into(),
                started_us: started_s * 1_000_000,
            };
            let entries = vec![
                claim(10, LeaseKind::Notify, "worker-0", 1),
                at(started_s, "worker-0", event),
            ];
            interleavings(&entries).contains(&WorkloadMark::CallWithLittleLeaseLeft)
        };
        // Lease 15 s from 10 s, margin 9 s: calls may start until 16 s.
        assert!(!launch(12), "4 s before the margin");
        assert!(launch(14), "2 s before the margin");
        assert!(!launch(16), "at the margin: another rule's breach");
    }

    #[test]
    fn a_repeated_cancel_is_marked_by_where_the_cancel_work_stood() {
        let repeat = |secs: u64| {
            let answer = Ok(CancelOutcome::AlreadyRequested("t1".into()));
            let event = Seen::CancelAnswered {
                n: 0,
                by: "owner-0".into(),
                answer,
            };
            at(secs, "user", event)
        };
        let ended = {
            let row = RowWrite {
                task_id: "t1".into(),
                token: 3,
                version: None,
                at_us: 0,
                action: WriteAction::CancelAcknowledged,
                outcome: Ok((2, 0, NotifyStatus::Pending)),
            };
            let event = Seen::StoreWrite {
                lease: LeaseKind::Cancel,
                rows: vec![row],
                dropped: false,
            };
            at(3, "db", event)
        };
        let entries = vec![
            repeat(1),
            claim(2, LeaseKind::Cancel, "worker-0", 3),
            repeat(2),
            ended,
            repeat(4),
        ];
        let marks = interleavings(&entries);
        for mark in [
            WorkloadMark::CancelRepeatedBeforeWork,
            WorkloadMark::CancelRepeatedDuringWork,
            WorkloadMark::CancelRepeatedAfterWork,
        ] {
            assert!(marks.contains(&mark), "{mark:?} missing from {marks:?}");
        }
    }
}
