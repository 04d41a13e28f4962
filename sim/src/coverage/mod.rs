//! Coverage marks: every condition a campaign should reach — each fault kind taking effect and
//! each workload feature the hosts exercise — as one typed list, [`Feature`] (TigerBeetle's
//! coverage marks). A seed records the marks it hit ([`fired`]); the campaign summary lists
//! every mark with its count, zeros included; a test fails when a mark not marked rare is hit
//! by no seed of 0..200.

pub mod confirmed_runs;
pub mod spent_budget;

use crate::history::{Entry, Event};
use crate::plan::Plan;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::BTreeSet;
use std::fmt;

/// Declares [`Feature`]: variant, trace name, whether seeds 0..200 may miss it, and a doc line.
macro_rules! features {
    ($($(#[doc = $doc:literal])* $variant:ident = $name:literal $(, $rare:ident)?;)+) => {
        /// A coverage mark: a fault kind that took effect or a workload feature exercised.
        #[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
        pub enum Feature {
            $($(#[doc = $doc])* $variant,)+
        }

        impl Feature {
            /// Every mark, in declaration order.
            pub const ALL: &'static [Feature] = &[$(Feature::$variant,)+];

            /// The trace and summary name.
            pub fn name(self) -> &'static str {
                match self {
                    $(Feature::$variant => $name,)+
                }
            }

            /// Whether seeds 0..200 may miss the mark (drawn rarely on purpose, or reached only
            /// in one gateway mode).
            pub fn rare(self) -> bool {
                match self {
                    $(Feature::$variant => features!(@rare $($rare)?),)+
                }
            }
        }
    };
    (@rare rare) => { true };
    (@rare) => { false };
}

features! {
    // Faults (see `crate::fault::Fault::feature`).
    /// A worker crashed and restarted.
    WorkerCrashRestart = "worker_crash_restart";
    /// A worker stopped gracefully and restarted.
    WorkerGracefulStop = "worker_graceful_stop";
    /// The remote server restarted and forgot its legacy tasks.
    RemoteRestartForgets = "remote_restart_forgets";
    /// A worker lane paused past its lease.
    WorkerPausePastLease = "worker_pause_past_lease";
    /// A worker lane stalled within its lease.
    WorkerStallWithinLease = "worker_stall_within_lease";
    /// A worker lost its link to the store.
    PartitionWorkerDb = "partition_worker_db";
    /// A worker lost its link to the remote server.
    PartitionWorkerMcp = "partition_worker_mcp";
    /// A worker lost its link to the launcher.
    PartitionWorkerGateway = "partition_worker_gateway";
    /// A worker's link to the store held messages.
    HoldWorkerDb = "hold_worker_db";
    /// A worker's link to the remote server held messages.
    HoldWorkerMcp = "hold_worker_mcp";
    /// A worker's link to the launcher held messages.
    HoldWorkerGateway = "hold_worker_gateway";
    /// The store committed and lost the reply.
    ReplyLostAfterCommitDb = "reply_lost_after_commit_db";
    /// The remote server did the work and lost the reply.
    ReplyLostAfterCommitMcp = "reply_lost_after_commit_mcp";
    /// The launcher did the work and lost the reply.
    ReplyLostAfterCommitGateway = "reply_lost_after_commit_gateway";
    /// The network slowed down.
    LatencySpike = "latency_spike";
    /// A worker's clock was skewed.
    ClockSkew = "clock_skew";
    /// A worker paused right after an answer.
    WorkerPauseAfterAnswer = "worker_pause_after_answer";
    /// A worker's clock was set to step back at news.
    WorkerClockStepAtNews = "worker_clock_step_at_news";
    /// The launcher answered 409 for a while.
    Launcher409Window = "launcher_409_window";
    /// The launcher failed transiently.
    LauncherTransientError = "launcher_transient_error";
    /// The launcher failed after creating the run.
    LauncherErrorAfterCommit = "launcher_error_after_commit";
    /// The launcher's lookups failed.
    LauncherLookupError = "launcher_lookup_error";
    /// Runs went missing.
    RunMissing = "run_missing";
    /// Runs were slow.
    RunSlow = "run_slow";
    /// Runs got stuck.
    RunStuck = "run_stuck";
    /// One task's versions were doomed to fail.
    RunVersionDoomed = "run_version_doomed";
    /// Runs failed.
    RunFailed = "run_failed";
    /// Runs timed out.
    RunTimedOut = "run_timed_out";
    /// Runs were interrupted.
    RunInterrupted = "run_interrupted";
    /// The remote server failed transiently.
    RemoteTransientError = "remote_transient_error";
    /// One remote task's server went down.
    RemoteTaskDown = "remote_task_down";
    /// The store refused inserts.
    StoreInsertRefused = "store_insert_refused";
    /// Runs ignored interrupts.
    RunIgnoresInterrupt = "run_ignores_interrupt";
    /// The store was down.
    StoreDown = "store_down";
    /// The remote server was slow.
    RemoteSlow = "remote_slow";
    // Workload features.
    /// The remote task cancelled itself.
    RemoteCancelledItself = "remote_cancelled_itself";
    /// Oversized remote text served.
    HostileOversized = "hostile_oversized";
    /// Remote text with NUL bytes served.
    HostileNul = "hostile_nul";
    /// Remote bytes that are not UTF-8 served.
    HostileInvalidUtf8 = "hostile_invalid_utf8";
    /// Remote text with forged tags served.
    HostileForgedTags = "hostile_forged_tags";
    /// Remote text echoing secrets served.
    HostileSecrets = "hostile_secrets";
    /// Remote text with a disguised denied tag served.
    HostileDisguised = "hostile_disguised";
    /// The remote server forgot a task (unknown task).
    RemoteUnknownTask = "remote_unknown_task";
    /// A poll hint that is not a number.
    HostileNanHint = "hostile_nan_hint";
    /// A report about another task id.
    HostileWrongTaskId = "hostile_wrong_task_id";
    /// A status the engine does not know.
    HostileUnknownStatus = "hostile_unknown_status";
    /// An oversized input request or artifact.
    HostileOversizedField = "hostile_oversized_field";
    /// The remote server handed out a handle twice.
    RemoteDuplicateHandle = "remote_duplicate_handle";
    /// The remote server served the same status again.
    RemoteStatusRepeat = "remote_status_repeat";
    /// The remote server went back to a status served before.
    RemoteStatusFlap = "remote_status_flap";
    /// A remote task degraded tracking twice.
    RemoteDegradedTwice = "remote_degraded_twice";
    /// A secret nested in the remote id.
    SecretNested = "secret_nested";
    /// A short remote id.
    SecretShortId = "secret_short_id";
    /// A short remote id, nested.
    SecretShortIdNested = "secret_short_id_nested";
    /// An answer the remote task took.
    AnswerTaken = "answer_taken";
    /// An answer the remote task ignored.
    AnswerIgnored = "answer_ignored";
    /// A cancel after the remote task cancelled itself.
    CancelAfterRemoteCancelled = "cancel_after_remote_cancelled";
    /// A cancel of a task already terminal.
    CancelAlreadyTerminal = "cancel_already_terminal";
    /// A cancel the remote server acknowledged.
    CancelAcknowledged = "cancel_acknowledged";
    /// The launcher's interrupt was ignored and the run went on.
    InterruptIgnoredRunWentOn = "interrupt_ignored_run_went_on";
    /// The launcher interrupted a stuck run.
    LauncherInterruptedStuckRun = "launcher_interrupted_stuck_run";
    /// A launch met a busy thread (409).
    Launcher409BusyThread = "launcher_409_busy_thread";
    /// A launch met a deleted thread (404).
    Launcher404ThreadGone = "launcher_404_thread_gone";
    /// An Agent Server launcher rolled back a newer run (LangGraph mode only, and there only when
    /// two runs of one key raced: no seed of the in-memory campaign reaches it).
    LauncherRollbackNewerRun = "launcher_rollback_newer_run", rare;
    /// A burst of submits.
    SubmitBurst = "submit_burst";
    /// A task with a hostile name.
    HostileTaskName = "hostile_task_name";
    /// A cancel by a user who does not own the task.
    CancelForeign = "cancel_foreign";
    /// A cancel by name by a user who does not own the task.
    CancelForeignByName = "cancel_foreign_by_name";
    /// A thread deleted by its user.
    ThreadDeleted = "thread_deleted";
    /// A dead letter requeued by an operator.
    DeadLetterRequeued = "dead_letter_requeued";
    /// A listing by a user who owns none of the tasks.
    ListForeign = "list_foreign";
    /// An answer by a user who does not own the task.
    AnswerForeign = "answer_foreign";
    /// Two cancels of one task at once.
    CancelConcurrent = "cancel_concurrent";
    /// A cancel by the task's name.
    CancelByName = "cancel_by_name";
    /// A cancel repeated.
    CancelRepeated = "cancel_repeated";
    /// A handle write met the store down.
    HandleWriteMetStoreDown = "handle_write_met_store_down";
    /// A notification claimed by a poll write's hand-off.
    NotificationClaimedByPoll = "notification_claimed_by_poll";
    /// A cancel dead-lettered.
    CancelDeadLetter = "cancel_dead_letter";
    /// A spent budget met a newer state.
    BudgetSpentNewerState = "budget_spent_newer_state";
    /// A run confirmed in the claim that launched it.
    RunConfirmedInClaim = "run_confirmed_in_claim";
    /// A worker's clock stepped back at news.
    WorkerClockSteppedAtNews = "worker_clock_stepped_at_news";
    /// A worker's clock stepped back after an answer.
    WorkerClockSteppedBack = "worker_clock_stepped_back";
}

impl fmt::Display for Feature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

impl Serialize for Feature {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for Feature {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        Feature::ALL
            .iter()
            .copied()
            .find(|f| f.name() == name)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown coverage mark {name:?}")))
    }
}

/// Every mark that took effect in a run.
pub fn fired(plan: &Plan, entries: &[Entry]) -> BTreeSet<Feature> {
    let mut marks = BTreeSet::new();
    for e in entries {
        match &e.event {
            Event::FaultFired { index } => {
                if let Some(f) = plan.faults.get(*index) {
                    marks.insert(f.feature());
                }
            }
            Event::Exercised { what } => {
                marks.insert(*what);
            }
            _ => {}
        }
    }
    marks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mark_names_are_unique_and_round_trip() {
        let names: BTreeSet<_> = Feature::ALL.iter().map(|f| f.name()).collect();
        assert_eq!(names.len(), Feature::ALL.len());
        for f in Feature::ALL {
            let json = serde_json::to_string(f).unwrap_or_default();
            assert_eq!(serde_json::from_str::<Feature>(&json).ok(), Some(*f));
        }
        assert!(serde_json::from_str::<Feature>("\"no_such_mark\"").is_err());
    }
}
