//! What a guarded store write did to its row, as the history records it: one name per action
//! of the engine's writes (DOMAIN §3–§6). Traces keep the JSON names (`"apply_poll"`,
//! `"cancel_budget_exhausted"`, …); the maps from the engine's actions are exhaustive, so a new
//! action of the engine does not compile until it has a name here.

use serde::{Deserialize, Serialize};
use std::fmt;
use tasklatch_core::transitions::answer::AnswerAction;
use tasklatch_core::transitions::cancel::CancelAction;
use tasklatch_core::transitions::outbox::NotifyAction;

/// The action of one row of a guarded store write.
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WriteAction {
    /// A poll result applied (poll lease).
    ApplyPoll,
    /// A lease given back without other work.
    Release,
    /// A run launched for the frozen snapshot.
    Launched,
    /// The thread was busy (409).
    Busy,
    /// The thread is gone (404): the version is dead-lettered.
    ThreadGone,
    /// The launcher refused the launch (a counted failure).
    LaunchFailed,
    /// The dispatched run succeeded: the version is delivered.
    RunSucceeded,
    /// The dispatched run failed (a counted failure).
    RunFailed,
    /// The dispatched run outlived its allowed life (a counted failure).
    RunOutlived,
    /// The dispatched run is still going.
    RunPending,
    /// The launcher could not be asked about the run (waited out, not counted).
    LookupUnavailable,
    /// The launcher could not be reached for a launch (waited out, not counted).
    LaunchUnavailable,
    /// The failure budget is spent: the version is dead-lettered.
    BudgetExhausted,
    /// An answer was sent.
    AnswerSent,
    /// An answer may have been sent (no reply).
    AnswerUnconfirmed,
    /// An answer was refused.
    AnswerFailed,
    /// An answer was held back (not sent).
    AnswerNotSent,
    /// Cancel work ended: the task was already terminal.
    CancelFinished,
    /// Cancel work ended: the server acknowledged the cancel.
    CancelAcknowledged,
    /// A cancel call failed (a counted failure).
    CancelFailed,
    /// The server could not be reached for a cancel (waited out, not counted).
    CancelUnavailable,
    /// The cancel budget is spent: the cancel is dead-lettered.
    CancelBudgetExhausted,
}

impl WriteAction {
    /// The trace name (`"apply_poll"`, …).
    pub fn name(self) -> &'static str {
        match self {
            WriteAction::ApplyPoll => "apply_poll",
            WriteAction::Release => "release",
            WriteAction::Launched => "launched",
            WriteAction::Busy => "busy",
            WriteAction::ThreadGone => "thread_gone",
            WriteAction::LaunchFailed => "launch_failed",
            WriteAction::RunSucceeded => "run_succeeded",
            WriteAction::RunFailed => "run_failed",
            WriteAction::RunOutlived => "run_outlived",
            WriteAction::RunPending => "run_pending",
            WriteAction::LookupUnavailable => "lookup_unavailable",
            WriteAction::LaunchUnavailable => "launch_unavailable",
            WriteAction::BudgetExhausted => "budget_exhausted",
            WriteAction::AnswerSent => "answer_sent",
            WriteAction::AnswerUnconfirmed => "answer_unconfirmed",
            WriteAction::AnswerFailed => "answer_failed",
            WriteAction::AnswerNotSent => "answer_not_sent",
            WriteAction::CancelFinished => "cancel_finished",
            WriteAction::CancelAcknowledged => "cancel_acknowledged",
            WriteAction::CancelFailed => "cancel_failed",
            WriteAction::CancelUnavailable => "cancel_unavailable",
            WriteAction::CancelBudgetExhausted => "cancel_budget_exhausted",
        }
    }

    /// Whether this cancel-lease write ends the cancel work.
    pub fn ends_cancel(self) -> bool {
        matches!(
            self,
            WriteAction::CancelFinished
                | WriteAction::CancelAcknowledged
                | WriteAction::CancelBudgetExhausted
        )
    }
}

impl fmt::Display for WriteAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl From<&NotifyAction> for WriteAction {
    fn from(a: &NotifyAction) -> Self {
        match a {
            NotifyAction::Launched(_) => WriteAction::Launched,
            NotifyAction::Busy => WriteAction::Busy,
            NotifyAction::ThreadGone => WriteAction::ThreadGone,
            NotifyAction::LaunchFailed(_) => WriteAction::LaunchFailed,
            NotifyAction::RunSucceeded => WriteAction::RunSucceeded,
            NotifyAction::RunFailed(_) => WriteAction::RunFailed,
            NotifyAction::RunOutlived(_) => WriteAction::RunOutlived,
            NotifyAction::RunPending => WriteAction::RunPending,
            NotifyAction::LookupUnavailable(_) => WriteAction::LookupUnavailable,
            NotifyAction::LaunchUnavailable(_) => WriteAction::LaunchUnavailable,
            NotifyAction::BudgetExhausted => WriteAction::BudgetExhausted,
        }
    }
}

impl From<&AnswerAction> for WriteAction {
    fn from(a: &AnswerAction) -> Self {
        match a {
            AnswerAction::Sent => WriteAction::AnswerSent,
            AnswerAction::Unconfirmed(_) => WriteAction::AnswerUnconfirmed,
            AnswerAction::Failed(_) => WriteAction::AnswerFailed,
            AnswerAction::NotSent => WriteAction::AnswerNotSent,
        }
    }
}

impl From<&CancelAction> for WriteAction {
    fn from(a: &CancelAction) -> Self {
        match a {
            CancelAction::Finished(_) => WriteAction::CancelFinished,
            CancelAction::Acknowledged(_) => WriteAction::CancelAcknowledged,
            CancelAction::Failed(_) => WriteAction::CancelFailed,
            CancelAction::Unavailable(_) => WriteAction::CancelUnavailable,
            CancelAction::BudgetExhausted => WriteAction::CancelBudgetExhausted,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trace_name_is_the_json_name() {
        for a in [
            WriteAction::ApplyPoll,
            WriteAction::CancelBudgetExhausted,
            WriteAction::LookupUnavailable,
        ] {
            assert_eq!(serde_json::to_string(&a).ok(), Some(format!("\"{a}\"")));
        }
    }
}
