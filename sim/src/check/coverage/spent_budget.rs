//! Coverage of "a spent budget meets a newer state" as the store saw it: a snapshot whose
//! dispatch took its fifth counted failure, and a newer event version the store recorded while
//! that snapshot was still in flight (DOMAIN §3: a dead letter kills one snapshot, never the
//! channel). Either the spent snapshot is dead-lettered and the channel reopens for the newer
//! version, or the next claim freezes the newer version with a fresh budget; both must end in
//! the newer version's delivery, which the checker's lost rule demands.

use crate::history::write_action::WriteAction;
use crate::history::RowWrite;
use std::collections::BTreeMap;
use tasklatch_core::policy::FAILURE_BUDGET;

/// Accepted notification writes that count a failure.
const FAILURES: [WriteAction; 3] = [
    WriteAction::LaunchFailed,
    WriteAction::RunFailed,
    WriteAction::RunOutlived,
];

/// Accepted notification writes that end a snapshot's dispatch.
const ENDS: [WriteAction; 3] = [
    WriteAction::RunSucceeded,
    WriteAction::ThreadGone,
    WriteAction::BudgetExhausted,
];

/// Per task: the snapshot version in flight and its counted failures, from accepted writes.
#[derive(Default)]
pub struct SpentBudgets {
    in_flight: BTreeMap<String, (u64, u32)>,
}

impl SpentBudgets {
    /// Takes one accepted or refused row write; `true` when it shows a newer event version
    /// than a snapshot in flight whose failures reached the budget.
    pub fn observe(&mut self, w: &RowWrite) -> bool {
        let Ok((event_version, _, _)) = w.outcome else {
            return false;
        };
        if let Some(version) = w.version {
            let entry = self
                .in_flight
                .entry(w.task_id.clone())
                .or_insert((version, 0));
            if entry.0 != version {
                *entry = (version, 0);
            }
            if FAILURES.contains(&w.action) {
                entry.1 += 1;
            }
        }
        let spent_and_newer = self
            .in_flight
            .get(&w.task_id)
            .is_some_and(|(v, failures)| *failures >= FAILURE_BUDGET && event_version > *v);
        if w.version.is_some() && ENDS.contains(&w.action) {
            self.in_flight.remove(&w.task_id);
        }
        spent_and_newer
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tasklatch_core::status::NotifyStatus;

    fn write(action: WriteAction, version: Option<u64>, event_version: u64) -> RowWrite {
        RowWrite {
            task_id: "t".into(),
            token: 1,
            version,
            at_us: 0,
            action,
            outcome: Ok((event_version, 0, NotifyStatus::Retry)),
        }
    }

    #[test]
    fn a_newer_version_after_five_failures_is_seen_once_the_budget_is_spent() {
        let mut s = SpentBudgets::default();
        for _ in 0..4 {
            assert!(!s.observe(&write(WriteAction::RunFailed, Some(1), 1)));
        }
        assert!(
            !s.observe(&write(WriteAction::ApplyPoll, None, 2)),
            "four failures only"
        );
        assert!(s.observe(&write(WriteAction::RunFailed, Some(1), 2)));
        assert!(s.observe(&write(WriteAction::BudgetExhausted, Some(1), 2)));
        assert!(
            !s.observe(&write(WriteAction::ApplyPoll, None, 3)),
            "dispatch ended"
        );
    }
}
