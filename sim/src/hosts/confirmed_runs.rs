//! Coverage of "a run confirmed in the claim that launched it", as the store saw it: an
//! accepted notification write that ends a run (`run_succeeded` or `run_failed`) when the
//! task's previous accepted notification write did not dispatch a run (`launched`) or look at
//! one (`run_pending`, `lookup_failed`). The engine then wrote the run's end once, without the
//! `dispatched` write and the later lookup claim.

use crate::history::RowWrite;
use std::collections::BTreeMap;

/// Accepted notification writes that end a run.
const RUN_ENDS: [&str; 2] = ["run_succeeded", "run_failed"];

/// Accepted notification writes that leave a run dispatched.
const DISPATCHED: [&str; 3] = ["launched", "run_pending", "lookup_failed"];

/// Per task: the action of its last accepted notification write.
#[derive(Default)]
pub struct ConfirmedRuns {
    last: BTreeMap<String, String>,
}

impl ConfirmedRuns {
    /// Takes one notification row write; `true` when it ends a run the same claim launched.
    pub fn observe(&mut self, w: &RowWrite) -> bool {
        if w.outcome.is_err() {
            return false;
        }
        let before = self.last.insert(w.task_id.clone(), w.action.clone());
        RUN_ENDS.contains(&w.action.as_str())
            && !before.is_some_and(|b| DISPATCHED.contains(&b.as_str()))
    }
}
