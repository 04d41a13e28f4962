//! Coverage of "a run confirmed in the claim that launched it", as the store saw it: an
//! accepted notification write that ends a run (`run_succeeded` or `run_failed`) when the
//! task's previous accepted notification write did not dispatch a run (`launched`) or look at
//! one (`run_pending`, `lookup_unavailable`). The engine then wrote the run's end once, without the
//! `dispatched` write and the later lookup claim.

use crate::history::write_action::WriteAction;
use crate::history::RowWrite;
use std::collections::BTreeMap;

/// Accepted notification writes that end a run.
const RUN_ENDS: [WriteAction; 2] = [WriteAction::RunSucceeded, WriteAction::RunFailed];

/// Accepted notification writes that leave a run dispatched.
const DISPATCHED: [WriteAction; 3] = [
    WriteAction::Launched,
    WriteAction::RunPending,
    WriteAction::LookupUnavailable,
];

/// Per task: the action of its last accepted notification write.
#[derive(Default)]
pub struct ConfirmedRuns {
    last: BTreeMap<String, WriteAction>,
}

impl ConfirmedRuns {
    /// Takes one notification row write; `true` when it ends a run the same claim launched.
    pub fn observe(&mut self, w: &RowWrite) -> bool {
        if w.outcome.is_err() {
            return false;
        }
        let before = self.last.insert(w.task_id.clone(), w.action);
        RUN_ENDS.contains(&w.action) && !before.is_some_and(|b| DISPATCHED.contains(&b))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tasklatch_core::lease::Refusal;
    use tasklatch_core::status::NotifyStatus;

    fn write(action: WriteAction, accepted: bool) -> RowWrite {
        RowWrite {
            task_id: "t".into(),
            token: 1,
            version: Some(1),
            at_us: 0,
            action,
            outcome: if accepted {
                Ok((1, 0, NotifyStatus::Claimed))
            } else {
                Err(Refusal::LeaseNotHeld)
            },
        }
    }

    #[test]
    fn a_run_end_is_confirmed_in_its_claim_only_when_nothing_dispatched_it() {
        let mut c = ConfirmedRuns::default();
        assert!(
            c.observe(&write(WriteAction::RunSucceeded, true)),
            "first write ends the run"
        );
        assert!(!c.observe(&write(WriteAction::Launched, true)));
        assert!(
            !c.observe(&write(WriteAction::RunFailed, true)),
            "dispatched first"
        );
        assert!(
            c.observe(&write(WriteAction::RunFailed, true)),
            "after a failure: launched again"
        );
        assert!(!c.observe(&write(WriteAction::Busy, true)));
        assert!(
            !c.observe(&write(WriteAction::RunSucceeded, false)),
            "refused writes count for nothing"
        );
        assert!(c.observe(&write(WriteAction::RunSucceeded, true)));
    }
}
