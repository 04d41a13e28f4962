//! Coverage marks: every condition a campaign should reach, as one typed list, [`Feature`]
//! (TigerBeetle's coverage marks): each fault kind taking effect ([`FaultMark`], declared
//! beside the fault kinds in `fault.rs`) and each workload feature the hosts exercise
//! ([`WorkloadMark`]). The names are the trace's and the campaign summary's, unique across both.

use crate::plan::fault::FaultMark;
use crate::plan::marks::marks;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

marks! {
    /// A workload feature the hosts exercise (hostile content, races, user actions…).
    enum WorkloadMark {
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
        /// A secret echo cut short (a remote id's or driver data's first or last bytes).
        SecretEchoCut = "secret_echo_cut";
        /// A secret echo opening or closing the text.
        SecretEchoAtEdge = "secret_echo_at_edge";
        /// A whole secret echoed right against punctuation (JSON, a URL path, quotes).
        SecretEchoDelimited = "secret_echo_delimited";
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
        /// A poll write opened a new version while another worker held a live notification
        /// lease on the task.
        PollNewsUnderNotifyLease = "poll_news_under_notify_lease";
        /// A launch or run lookup started with little lease left before its margin.
        CallWithLittleLeaseLeft = "call_with_little_lease_left";
        /// An owner answered the same question twice.
        AnswerRepeated = "answer_repeated";
        /// A repeated cancel request met a task before the cancel loop claimed it.
        CancelRepeatedBeforeWork = "cancel_repeated_before_work";
        /// A repeated cancel request met cancel work claimed and not yet ended.
        CancelRepeatedDuringWork = "cancel_repeated_during_work";
        /// A repeated cancel request met cancel work already ended (the task still going, or
        /// ended by the cancel).
        CancelRepeatedAfterWork = "cancel_repeated_after_work";
        /// A thread's runs were listed while one key had two runs (LangGraph mode only: the
        /// in-memory campaign's ledger never makes two).
        TwoRunsOneKey = "two_runs_one_key", rare;
        /// Retention ran while a dead letter older than a finished row's retention age was
        /// kept, and an operator requeued it.
        RetentionMetFreshDeadLetter = "retention_met_fresh_dead_letter";
        /// One worker's clock ran ahead while another's ran behind.
        SkewBothWays = "skew_both_ways";
    }
}

/// A coverage mark: a fault kind that took effect, or a workload feature exercised.
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub enum Feature {
    /// A fault kind took effect.
    Fault(FaultMark),
    /// A workload feature was exercised.
    Workload(WorkloadMark),
}

impl Feature {
    /// Every mark: the fault marks, then the workload marks, each in declaration order.
    pub const ALL: &'static [Feature] = &Self::EVERY;

    const EVERY: [Feature; FaultMark::COUNT + WorkloadMark::COUNT] = {
        let mut out = [Feature::Fault(FaultMark::ALL[0]); FaultMark::COUNT + WorkloadMark::COUNT];
        let mut i = 0;
        while i < FaultMark::COUNT {
            out[i] = Feature::Fault(FaultMark::ALL[i]);
            i += 1;
        }
        let mut j = 0;
        while j < WorkloadMark::COUNT {
            out[FaultMark::COUNT + j] = Feature::Workload(WorkloadMark::ALL[j]);
            j += 1;
        }
        out
    };

    /// The trace and summary name.
    pub fn name(self) -> &'static str {
        match self {
            Feature::Fault(m) => m.name(),
            Feature::Workload(m) => m.name(),
        }
    }

    /// Whether seeds 0..200 may miss the mark.
    pub fn rare(self) -> bool {
        match self {
            Feature::Fault(m) => m.rare(),
            Feature::Workload(m) => m.rare(),
        }
    }
}

impl From<FaultMark> for Feature {
    fn from(m: FaultMark) -> Self {
        Feature::Fault(m)
    }
}

impl From<WorkloadMark> for Feature {
    fn from(m: WorkloadMark) -> Self {
        Feature::Workload(m)
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

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
