//! The notification outbox: the version pair and the seven states (DOMAIN §2, §3).
//!
//! Undelivered work exists iff `event_version > notified_version`. A new fingerprint bumps
//! `event_version`; if nothing is in flight it (re)opens the channel, otherwise it is only
//! recorded and picked up when the current dispatch ends — the frozen snapshot is never
//! overwritten. When attention clears, undelivered versions without an event are dropped.

use crate::event::{Event, Fingerprint};
use crate::ids::RunId;
use crate::invariants::debug_check_outbox;
use crate::lease::Lease;
use crate::mutation::{self, planted, Mutant};
use crate::policy::{stored_error, Policy};
use crate::status::{DeadLetterReason, NotifyStatus};
use crate::task::Outbox;
use crate::time::Timestamp;
use serde::{Deserialize, Serialize};

/// What recording an event did to the outbox.
#[derive(Copy, Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub enum Recorded {
    /// A new version was recorded.
    NewVersion(u64),
    /// Same fingerprint: nothing changed.
    Unchanged,
    /// No event (attention cleared or never needed): the fingerprint is retired and any
    /// undelivered version that is not in flight was dropped.
    Cleared,
}

/// Records the latest event (or its absence) on the outbox (DOMAIN §2).
pub fn record_event(o: &mut Outbox, new: Option<(Event, Fingerprint)>, now: Timestamp) -> Recorded {
    let recorded = record(o, new, now);
    debug_check_outbox(o);
    recorded
}

fn record(o: &mut Outbox, new: Option<(Event, Fingerprint)>, now: Timestamp) -> Recorded {
    let Some((event, fp)) = new else {
        return clear(o);
    };
    let changed = o.fingerprint.as_ref() != Some(&fp);
    let changed = mutation::substitute(Mutant::FingerprintCheckSkipped, changed, |_| true);
    if !changed {
        // Same fingerprint: the version stays, nothing changed.
        let unchanged = (o.event_version, Recorded::Unchanged);
        let (version, recorded) = mutation::substitute(
            Mutant::VersionBumpWithoutChange,
            unchanged,
            planted::bumped_anyway,
        );
        o.event_version = version;
        return recorded;
    }
    record_new(o, event, fp, now)
}

/// No event: the fingerprint is retired and undelivered versions not in flight are dropped.
fn clear(o: &mut Outbox) -> Recorded {
    // (A kept fingerprint without an event is the latch a cleared degradation left.)
    o.fingerprint = mutation::substitute(Mutant::SecondDegradationSuppressed, None, |_| {
        planted::degradation_latch(o)
    });
    o.event = None;
    if !o.status.in_flight() && o.has_undelivered() {
        drop_undelivered(o);
    }
    Recorded::Cleared
}

/// A new fingerprint: a new version, which (re)opens the channel unless a dispatch is in
/// flight — then the frozen snapshot stays and the new version waits for the dispatch's end.
fn record_new(o: &mut Outbox, event: Event, fp: Fingerprint, now: Timestamp) -> Recorded {
    o.event_version += 1;
    o.fingerprint = Some(fp);
    o.event = Some(event);
    let busy = o.status.in_flight();
    let busy = mutation::substitute(Mutant::DeadLetterNotRevived, busy, |busy| {
        planted::dead_letter_stays(busy, o.status)
    });
    if busy {
        let frozen = (o.dispatch_version, o.dispatch_event.take());
        (o.dispatch_version, o.dispatch_event) =
            mutation::substitute(Mutant::InFlightSnapshotOverwritten, frozen, |_| {
                planted::latest_as_frozen(o)
            });
    } else {
        reopen(o, now);
    }
    Recorded::NewVersion(o.event_version)
}

/// Opens the channel for the latest version: pending, due now, dispatch fields and counters reset.
fn reopen(o: &mut Outbox, now: Timestamp) {
    o.status = NotifyStatus::Pending;
    o.due_at = now;
    o.dispatch_event = None;
    o.dispatch_attempt = 0;
    o.run_id = None;
    o.failures = 0;
    o.last_error = None;
}

/// Settles every undelivered version: nothing is left to say about them.
fn drop_undelivered(o: &mut Outbox) {
    o.notified_version = o.event_version;
    o.dispatch_event = None;
    o.run_id = None;
    if o.status == NotifyStatus::Pending {
        o.status = NotifyStatus::None;
    }
}

/// Whether the notification loop may claim this outbox at `now` (DOMAIN §3).
pub fn claimable(o: &Outbox, now: Timestamp) -> bool {
    o.status.claimable()
        && o.has_undelivered()
        && o.due_at <= now
        && Lease::is_free(o.lease.as_ref(), now)
}

/// Claims the outbox with `lease`: freezes the snapshot when there is none or a newer version
/// with an event exists (a new version resets attempt and failure counters) and the row is
/// `claimed`; otherwise keeps the frozen one and its status (a pending row becomes `claimed`).
/// A dispatched row keeps its run. Precondition: [`claimable`].
pub fn claim(o: &mut Outbox, lease: Lease) {
    debug_assert!(
        o.event.is_some() || o.dispatch_event.is_some() || o.status == NotifyStatus::Dispatched,
        "claim precondition: an outbox claimed with nothing to deliver"
    );
    o.claims = lease.token.0;
    o.lease = Some(lease);
    if o.status != NotifyStatus::Dispatched {
        freeze(o);
    }
    debug_check_outbox(o);
}

/// Freezes the snapshot to deliver, unless the frozen one is still the one to deliver.
fn freeze(o: &mut Outbox) {
    let newer = o.dispatch_version < o.event_version && o.event.is_some();
    let rebuild = o.dispatch_event.is_none() || newer;
    if rebuild {
        if o.event_version != o.dispatch_version {
            o.dispatch_attempt = 0;
            o.failures =
                mutation::substitute(Mutant::FailuresCarriedToNewerVersion, 0, |_| o.failures);
            o.run_id = None;
        }
        o.dispatch_version = o.event_version;
        o.dispatch_event = o.event.clone();
    }
    if rebuild || o.status == NotifyStatus::Pending {
        o.status = NotifyStatus::Claimed;
    }
}

/// The idempotency key of the frozen snapshot's current attempt (DOMAIN §3 "Delivery").
pub fn idempotency_key(task_id: &crate::ids::TaskId, o: &Outbox) -> String {
    format!(
        "task:{}:{}:{}",
        task_id, o.dispatch_version, o.dispatch_attempt
    )
}

/// The outcome of one step of a dispatch, applied under the notification lease.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub enum NotifyAction {
    /// The launcher accepted the run.
    Launched(RunId),
    /// 409: another run is active on the thread. Not a failure.
    Busy,
    /// 404: the thread is gone. Permanent.
    ThreadGone,
    /// The launch was refused for the request itself: counted; the same key is retried after
    /// backoff.
    LaunchFailed(String),
    /// The launcher could not be reached, timed out or answered 5xx (the run may exist): not a
    /// failure of the event (DOMAIN §3). The same key is retried after the unavailability
    /// backoff; only an outage that has lasted `max_unavailable` dead-letters the snapshot.
    LaunchUnavailable(String),
    /// The run ended successfully.
    RunSucceeded,
    /// The run failed, timed out, was interrupted or is missing: counted; next attempt.
    RunFailed(String),
    /// The run outlived `max_run_life` and was interrupted — or its interrupt failed: counted;
    /// next attempt, like [`NotifyAction::RunFailed`], but the run's id is kept, so the next
    /// attempt looks at it before launching and its late success still delivers the version
    /// (DOMAIN §3: one version, one delivery).
    RunOutlived(String),
    /// The run is still going: look again later. Not a failure.
    RunPending,
    /// The run's status could not be read (the launcher was not reached, timed out or answered
    /// 5xx): not a failure, like [`NotifyAction::LaunchUnavailable`]; look again after the
    /// unavailability backoff.
    LookupUnavailable(String),
    /// The failure budget is spent (checked before any launch or lookup).
    BudgetExhausted,
}

/// Applies `action` to a guarded outbox and releases the notification lease (DOMAIN §3).
pub fn apply_action(o: &mut Outbox, action: NotifyAction, now: Timestamp, policy: &Policy) {
    let action = mutation::substitute(
        Mutant::ThreadGoneRetried,
        action,
        planted::thread_gone_retried,
    );
    apply(o, action, now, policy);
    debug_check_outbox(o);
}

fn apply(o: &mut Outbox, action: NotifyAction, now: Timestamp, policy: &Policy) {
    o.lease = None;
    if !action.unanswered() {
        o.unavailable_since = None;
        o.outages = 0;
    }
    match action {
        NotifyAction::Launched(run) => {
            o.status = NotifyStatus::Dispatched;
            o.run_id = Some(run);
            o.launched_at = Some(now);
            o.due_at = now.plus(policy.run_check_interval);
        }
        NotifyAction::Busy => busy(o, now, policy),
        NotifyAction::ThreadGone => end_dispatch(o, Some(DeadLetterReason::ThreadGone), now),
        NotifyAction::LaunchFailed(error) => launch_failed(o, &error, now, policy),
        NotifyAction::LaunchUnavailable(error) | NotifyAction::LookupUnavailable(error)
            if policy.outage_too_long(o.unavailable_since, now) =>
        {
            o.last_error = Some(stored_error(&error));
            o.unavailable_since = None;
            o.outages = 0;
            end_dispatch(o, Some(DeadLetterReason::Unavailable), now);
        }
        NotifyAction::LaunchUnavailable(error) => launch_unavailable(o, &error, now, policy),
        NotifyAction::LookupUnavailable(error) => wait_out(o, &error, now, policy),
        NotifyAction::RunSucceeded => end_dispatch(o, None, now),
        NotifyAction::RunFailed(error) => run_failed(o, &error, now, policy),
        NotifyAction::RunOutlived(error) => {
            let interrupted = o.run_id.take();
            run_failed(o, &error, now, policy);
            o.run_id = interrupted;
        }
        NotifyAction::RunPending => {
            o.due_at = now.plus(policy.run_check_interval);
        }
        NotifyAction::BudgetExhausted => end_dispatch(o, Some(DeadLetterReason::Budget), now),
    }
}

/// 409, another run is active on the thread: not a failure. Pending again after the run check
/// interval, the frozen snapshot dropped (the next claim rebuilds it from the latest event).
fn busy(o: &mut Outbox, now: Timestamp, policy: &Policy) {
    o.busy_count = o.busy_count.saturating_add(1);
    o.failures = mutation::substitute(Mutant::BusyCountedAsFailure, o.failures, planted::one_more);
    o.status = NotifyStatus::Pending;
    let frozen = (o.dispatch_version, None);
    (o.dispatch_version, o.dispatch_event) =
        mutation::substitute(Mutant::BusyDeliversStaleSnapshot, frozen, |_| {
            planted::stale_snapshot(o)
        });
    o.due_at = now.plus(policy.run_check_interval);
    if o.event.is_none() && o.dispatch_event.is_none() {
        drop_undelivered(o);
    }
}

/// A launch refused for the request itself: counted, the same key retried after backoff.
fn launch_failed(o: &mut Outbox, error: &str, now: Timestamp, policy: &Policy) {
    o.failures += 1;
    o.dispatch_attempt = mutation::substitute(
        Mutant::AttemptBumpedAfterLaunchError,
        o.dispatch_attempt,
        planted::one_more,
    );
    o.last_error = Some(stored_error(error));
    o.status = NotifyStatus::Pending;
    o.due_at = now.plus(policy.retry_delay(o.failures));
    if o.event.is_none() {
        drop_undelivered(o);
    }
}

/// A launch left unanswered (the run may exist): waited out, the same key retried.
fn launch_unavailable(o: &mut Outbox, error: &str, now: Timestamp, policy: &Policy) {
    wait_out(o, error, now, policy);
    o.dispatch_attempt = mutation::substitute(
        Mutant::AttemptBumpedAfterLaunchError,
        o.dispatch_attempt,
        planted::one_more,
    );
    o.status = NotifyStatus::Pending;
    if o.event.is_none() {
        drop_undelivered(o);
    }
}

/// A failed run: counted, the next attempt (a new key) after backoff.
fn run_failed(o: &mut Outbox, error: &str, now: Timestamp, policy: &Policy) {
    o.failures += 1;
    let attempt = o.dispatch_attempt + 1;
    o.dispatch_attempt =
        mutation::substitute(Mutant::AttemptNotBumpedAfterFailedRun, attempt, |_| {
            o.dispatch_attempt
        });
    o.run_id = None;
    o.last_error = Some(stored_error(error));
    o.status = NotifyStatus::Retry;
    o.due_at = now.plus(policy.retry_delay(o.failures));
}

impl NotifyAction {
    /// Whether the launcher left the step's call unanswered (unreachable, timed out, 5xx).
    pub fn unanswered(&self) -> bool {
        matches!(
            self,
            NotifyAction::LaunchUnavailable(_) | NotifyAction::LookupUnavailable(_)
        )
    }
}

/// Waits out an unanswered call: the episode's start is kept (or set), the attempt is retried
/// after the unavailability backoff, and no failure is counted (DOMAIN §3).
fn wait_out(o: &mut Outbox, error: &str, now: Timestamp, policy: &Policy) {
    o.unavailable_since.get_or_insert(now);
    o.outages = o.outages.saturating_add(1);
    o.failures = mutation::substitute(Mutant::UnavailabilityCounted, o.failures, planted::one_more);
    o.last_error = Some(stored_error(error));
    let due = now.plus(policy.unavailable_delay(o.outages));
    o.due_at = mutation::substitute(Mutant::OutageRetriedAtOnce, due, |_| now);
}

/// Ends the dispatch of the frozen snapshot: delivered (`dead` is `None`) or dead-lettered.
/// If a newer version with an event exists, the channel reopens for it instead — a dead letter
/// kills one snapshot, never the channel; newer versions without an event are dropped.
fn end_dispatch(o: &mut Outbox, dead: Option<DeadLetterReason>, now: Timestamp) {
    o.notified_version = o.notified_version.max(o.dispatch_version);
    o.dispatch_event = None;
    o.run_id = None;
    if let Some(reason) = dead {
        o.dead_letter = Some((o.dispatch_version, reason));
    }
    let reopens = o.has_undelivered() && o.event.is_some();
    let reopens = mutation::substitute(Mutant::BudgetKillsNewerVersion, reopens, |reopens| {
        planted::budget_kills_channel(reopens, dead)
    });
    if reopens {
        reopen(o, now);
        return;
    }
    o.notified_version = o.event_version;
    o.settled_at = Some(now);
    o.status = if dead.is_some() {
        NotifyStatus::DeadLetter
    } else {
        NotifyStatus::Delivered
    };
}

/// What an operator's requeue of a dead letter did.
#[derive(Copy, Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub enum Requeued {
    /// The latest event was recorded again as this new version: due now, with a fresh key and
    /// a fresh failure budget.
    NewVersion(u64),
    /// The notification is not dead-lettered (delivered, pending, in flight, or never needed).
    NotDeadLettered,
    /// Dead-lettered, but the task's latest state says nothing worth notifying any more.
    NothingToSay,
}

/// Requeues a dead-lettered notification (operator action): its latest event becomes a new
/// version, so it is delivered under a new idempotency key (`task:{id}:{v+1}:0`) with a fresh
/// budget; the old dead letter stays recorded. Anything else is left untouched. A dead-lettered
/// outbox holds no lease, so no fencing is needed; the store applies this atomically per row.
pub fn requeue(o: &mut Outbox, now: Timestamp) -> Requeued {
    if o.status != NotifyStatus::DeadLetter {
        return Requeued::NotDeadLettered;
    }
    if o.event.is_none() {
        return Requeued::NothingToSay;
    }
    o.event_version += 1;
    reopen(o, now);
    debug_check_outbox(o);
    Requeued::NewVersion(o.event_version)
}

/// Releases the notification lease without changing the phase; `error` counts a failure.
pub fn release(o: &mut Outbox, retry_at: Timestamp, error: Option<&str>) {
    o.lease = None;
    o.due_at = retry_at;
    if let Some(e) = error {
        o.failures += 1;
        o.last_error = Some(stored_error(e));
    }
    debug_check_outbox(o);
}
