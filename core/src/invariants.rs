//! The rules a task row holds between any two store calls (DOMAIN §2–§6), checked in the code.
//!
//! [`Outbox::check_invariants`] and [`TaskRow::check_invariants`] return the first broken rule
//! as a typed [`RowRule`] (never a panic). Every pure transition that mutates a row ends with
//! [`debug_check_outbox`] or [`debug_check_row`], and so does every `MemStore` write: in a debug
//! or test build a broken rule panics there, naming the rule and the task id (never a secret).
//! Release builds skip the check.
//!
//! While a planted bug of the mutation campaign is active (the `mutations` feature), a broken
//! rule does not panic — those bugs are there to be caught from the outside, by the
//! simulation's checker — but is recorded, in debug and release builds alike, as an
//! [`crate::mutation::InvariantBreach`] (the task id and the rule, nothing else) in a per-thread
//! log the simulation drains after each step with
//! [`crate::mutation::take_invariant_breaches`]. The log keeps the first
//! [`crate::mutation::MAX_INVARIANT_BREACHES`] breaches between two drains.
//!
//! These are the rules the transitions guarantee whatever the caller sends through the `Store`
//! API. The failure budgets are not among them: the store counts every failure it is told of,
//! and it is the engine that checks a budget before acting (DOMAIN §3, §6).

use crate::event::Event;
use crate::lease::LeaseKind;
use crate::mutation;
use crate::policy::MAX_STORED_ERROR;
use crate::status::{CancelStatus, NotifyStatus, RemoteStatus};
use crate::task::{Outbox, TaskRow};

/// A rule of the task row. As an error: the rule that is broken.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, thiserror::Error)]
pub enum RowRule {
    /// `notified_version ≤ event_version`.
    #[error("notified_version ≤ event_version")]
    NotifiedUpToEvent,
    /// `dispatch_version ≤ event_version`.
    #[error("dispatch_version ≤ event_version")]
    DispatchUpToEvent,
    /// An event is stored iff its fingerprint is.
    #[error("an event iff a fingerprint")]
    EventIffFingerprint,
    /// The stored fingerprint is the stored event's.
    #[error("the stored fingerprint is the event's")]
    FingerprintOfEvent,
    /// An event or a frozen snapshot needs attention or degraded tracking: none is empty.
    #[error("an event or a frozen snapshot is worth saying")]
    WorthSaying,
    /// An event or a frozen snapshot is about the row's own task.
    #[error("an event is about its own task")]
    EventOfThisTask,
    /// Claimed, dispatched and retry rows carry a frozen snapshot.
    #[error("a dispatch in flight has a frozen snapshot")]
    InFlightFrozen,
    /// A dispatched row knows its run.
    #[error("a dispatched row has a run")]
    DispatchedHasRun,
    /// A frozen snapshot is an unsettled version: `notified_version < dispatch_version`.
    #[error("a frozen snapshot is undelivered")]
    FrozenUndelivered,
    /// Undelivered work is claimable (pending, claimed, dispatched or retry): never stranded.
    #[error("undelivered work is claimable")]
    UndeliveredClaimable,
    /// Undelivered work not in flight has something to send: nothing empty waits.
    #[error("undelivered work has something to send")]
    NothingEmptyWaits,
    /// A notification lease is held only by a dispatch in flight.
    #[error("a notification lease is held only in flight")]
    NotifyLeaseInFlight,
    /// A dead-lettered version is settled.
    #[error("a dead-lettered version is settled")]
    DeadLetterSettled,
    /// Stored error texts are bounded to the stored limit.
    #[error("stored errors are bounded")]
    ErrorBounded,
    /// A terminal task is never polled again.
    #[error("a terminal task has no next poll")]
    TerminalNotPolled,
    /// The last poll error is kept exactly while poll errors are consecutive.
    #[error("a last poll error iff consecutive poll errors")]
    PollErrorIffErrors,
    /// Cancel work exists only after a cancel request.
    #[error("cancel work needs a cancel request")]
    CancelNeedsRequest,
    /// Cancel work is scheduled exactly while it is requested.
    #[error("cancel work is due iff requested")]
    CancelDueIffRequested,
    /// A cancel lease is held only by requested cancel work.
    #[error("a cancel lease is held only while requested")]
    CancelLeaseRequested,
    /// A held lease carries the row's newest fencing token of its kind.
    #[error("a held lease is the newest claim")]
    LeaseIsNewestClaim,
    /// A row without a recorded remote handle is a submit's intent (`submitted`, nothing to
    /// say yet) or one its grace ended as untracked (`failed`): no other state can be reached
    /// without a remote task (DOMAIN §7).
    #[error("a row without a remote handle is an intent or ended untracked")]
    UnrecordedHandleIsIntent,
}

/// `Ok` when `rule` holds, else the rule as the error.
fn holds(rule: RowRule, ok: bool) -> Result<(), RowRule> {
    if ok {
        Ok(())
    } else {
        Err(rule)
    }
}

fn worth_saying(e: &Event) -> bool {
    e.status.needs_attention() || e.tracking_degraded
}

fn bounded(text: Option<&str>) -> bool {
    text.is_none_or(|t| t.chars().count() <= MAX_STORED_ERROR)
}

impl Outbox {
    /// Checks the outbox's own rules (DOMAIN §2, §3): the version pair, the event and its
    /// fingerprint, the frozen snapshot, undelivered work, the lease. Returns the first broken
    /// rule.
    pub fn check_invariants(&self) -> Result<(), RowRule> {
        use RowRule::*;
        holds(
            NotifiedUpToEvent,
            self.notified_version <= self.event_version,
        )?;
        holds(
            DispatchUpToEvent,
            self.dispatch_version <= self.event_version,
        )?;
        holds(
            EventIffFingerprint,
            self.event.is_some() == self.fingerprint.is_some(),
        )?;
        if let Some(e) = &self.event {
            holds(WorthSaying, worth_saying(e))?;
            holds(
                FingerprintOfEvent,
                self.fingerprint.as_ref() == Some(&e.fingerprint()),
            )?;
        }
        self.check_dispatch()?;
        if self.has_undelivered() {
            holds(UndeliveredClaimable, self.status.claimable())?;
            holds(
                NothingEmptyWaits,
                self.status.in_flight() || self.event.is_some() || self.dispatch_event.is_some(),
            )?;
        }
        holds(
            NotifyLeaseInFlight,
            self.lease.is_none() || self.status.in_flight(),
        )?;
        holds(
            DeadLetterSettled,
            self.dead_letter
                .is_none_or(|(v, _)| v <= self.notified_version),
        )?;
        holds(ErrorBounded, bounded(self.last_error.as_deref()))
    }

    /// The frozen snapshot and the dispatch in flight.
    fn check_dispatch(&self) -> Result<(), RowRule> {
        use RowRule::*;
        if let Some(e) = &self.dispatch_event {
            holds(WorthSaying, worth_saying(e))?;
            holds(
                FrozenUndelivered,
                self.notified_version < self.dispatch_version,
            )?;
        }
        holds(
            InFlightFrozen,
            !self.status.in_flight() || self.dispatch_event.is_some(),
        )?;
        holds(
            DispatchedHasRun,
            self.status != NotifyStatus::Dispatched || self.run_id.is_some(),
        )
    }
}

impl TaskRow {
    /// Checks every rule of the row (DOMAIN §2–§6): the outbox's
    /// ([`Outbox::check_invariants`]), then the poll schedule, the cancel work and the leases.
    /// Returns the first broken rule.
    pub fn check_invariants(&self) -> Result<(), RowRule> {
        use RowRule::*;
        self.outbox.check_invariants()?;
        let own = |e: &Option<Event>| e.as_ref().is_none_or(|e| &e.task_id == self.id());
        holds(
            EventOfThisTask,
            own(&self.outbox.event) && own(&self.outbox.dispatch_event),
        )?;
        holds(
            TerminalNotPolled,
            !self.remote.status.is_terminal() || self.poll.next_poll_at.is_none(),
        )?;
        holds(
            PollErrorIffErrors,
            (self.poll.consecutive_errors > 0) == self.poll.last_error.is_some(),
        )?;
        let poll_error = self.poll.last_error.as_ref().map(|e| e.message.as_str());
        holds(
            ErrorBounded,
            bounded(poll_error) && bounded(self.cancel.last_error.as_deref()),
        )?;
        holds(
            UnrecordedHandleIsIntent,
            !self.identity.handle.is_unrecorded()
                || matches!(
                    self.remote.status,
                    RemoteStatus::Submitted | RemoteStatus::Failed
                ),
        )?;
        self.check_cancel()?;
        self.check_leases()
    }

    fn check_cancel(&self) -> Result<(), RowRule> {
        use RowRule::*;
        let c = &self.cancel;
        let requested = c.status == CancelStatus::Requested;
        holds(
            CancelNeedsRequest,
            c.status == CancelStatus::None || c.requested_at.is_some(),
        )?;
        holds(CancelDueIffRequested, requested == c.due_at.is_some())?;
        holds(CancelLeaseRequested, c.lease.is_none() || requested)
    }

    fn check_leases(&self) -> Result<(), RowRule> {
        for kind in LeaseKind::ALL {
            let claims = match kind {
                LeaseKind::Poll => self.poll.claims,
                LeaseKind::Notify => self.outbox.claims,
                LeaseKind::Cancel => self.cancel.claims,
            };
            holds(
                RowRule::LeaseIsNewestClaim,
                self.lease(kind).is_none_or(|l| l.token.0 == claims),
            )?;
        }
        Ok(())
    }
}

/// Whether the checks run: in debug builds, and in any build while a planted bug is active.
fn checking() -> bool {
    cfg!(debug_assertions) || mutation::current().is_some()
}

/// What a broken `rule` of `task` does: recorded while a planted bug is active, else a panic
/// naming the rule and the task id.
#[track_caller]
fn broken(task: &dyn std::fmt::Display, rule: RowRule) {
    if mutation::current().is_some() {
        mutation::record_invariant_breach(task, rule);
    } else {
        panic!("task {task}: invariant broken: {rule}");
    }
}

/// In a debug build, panics if `row` breaks a rule, naming the rule and the task id; while a
/// planted bug is active (any build), records the breach instead (see the module docs).
/// Called after every transition that mutates a row and after every store write.
#[track_caller]
pub fn debug_check_row(row: &TaskRow) {
    if checking() {
        if let Err(rule) = row.check_invariants() {
            broken(row.id(), rule);
        }
    }
}

/// In a debug build, panics if `outbox` breaks a rule, naming the rule and the task id its
/// events name (`?` when it holds none); while a planted bug is active (any build), records
/// the breach instead (see the module docs). Called after every transition of the outbox
/// alone.
#[track_caller]
pub fn debug_check_outbox(outbox: &Outbox) {
    if checking() {
        if let Err(rule) = outbox.check_invariants() {
            let task = outbox.event.as_ref().or(outbox.dispatch_event.as_ref());
            let task = task.map_or("?", |e| e.task_id.as_str());
            broken(&task, rule);
        }
    }
}

#[cfg(all(test, feature = "mutations"))]
mod tests {
    use super::*;
    use crate::mutation::{
        activate, take_invariant_breaches, InvariantBreach, Mutant, MAX_INVARIANT_BREACHES,
    };
    use crate::text::test_support::row;

    fn breach(task: &str, rule: RowRule) -> InvariantBreach {
        InvariantBreach {
            task: task.into(),
            rule,
        }
    }

    /// Under a planted bug a broken row is not a panic: the check records the task id and the
    /// rule, the drain hands them over once, and the log keeps only its first breaches.
    #[test]
    fn under_a_planted_bug_a_broken_row_is_recorded_and_drained_not_panicked() {
        let _on = activate(Some(Mutant::InFlightSnapshotOverwritten));
        let mut r = row("t1", "task", RemoteStatus::Working, 1_000);
        r.outbox.notified_version = r.outbox.event_version + 1;
        assert_eq!(r.check_invariants(), Err(RowRule::NotifiedUpToEvent));
        debug_check_row(&r);
        debug_check_outbox(&r.outbox);
        let rule = RowRule::NotifiedUpToEvent;
        assert_eq!(
            take_invariant_breaches(),
            vec![breach("t1", rule), breach("?", rule)]
        );
        assert_eq!(take_invariant_breaches(), Vec::new(), "drained");
        for _ in 0..MAX_INVARIANT_BREACHES + 5 {
            debug_check_row(&r);
        }
        assert_eq!(take_invariant_breaches().len(), MAX_INVARIANT_BREACHES);
    }

    /// A sound row records nothing, and without a planted bug nothing is recorded either (a
    /// debug build panics instead: `tests/invariants.rs`).
    #[test]
    fn a_sound_row_records_nothing() {
        let _on = activate(Some(Mutant::InFlightSnapshotOverwritten));
        let r = row("t1", "task", RemoteStatus::Working, 1_000);
        debug_check_row(&r);
        assert_eq!(take_invariant_breaches(), Vec::new());
    }
}
