//! The row's rules in the code ([`tasklatch_core::invariants`]): each broken rule is named by
//! `check_invariants`, and in a debug build a transition or a store write that leaves a rule
//! broken panics there, naming the rule and the task id and no secret.

mod support;

use std::panic::{catch_unwind, AssertUnwindSafe};
use tasklatch_core::conformance::support::{claim, poll_once, report, submitted, t};
use tasklatch_core::event::{Event, Fingerprint};
use tasklatch_core::ids::RunId;
use tasklatch_core::invariants::{debug_check_outbox, RowRule};
use tasklatch_core::lease::{Lease, LeaseKind, LeaseToken};
use tasklatch_core::mem_store::MemStore;
use tasklatch_core::policy::{Policy, MAX_STORED_ERROR};
use tasklatch_core::status::{CancelStatus, DeadLetterReason, NotifyStatus, RemoteStatus};
use tasklatch_core::store::Store;
use tasklatch_core::task::{Outbox, TaskRow};

/// A row with everything in play: an input_required event (version 1) whose notification is
/// claimed (snapshot frozen, lease held), reached through the real store.
async fn claimed_row() -> TaskRow {
    let s = MemStore::new(Policy::default());
    s.insert_task(submitted("a", t(0))).await.unwrap();
    poll_once(&s, "a", 0, |r| report(r, RemoteStatus::InputRequired, t(0)))
        .await
        .unwrap();
    let c = claim(&s, LeaseKind::Notify, "n", t(1), 10).await.remove(0);
    assert_eq!(c.row.outbox.status, NotifyStatus::Claimed);
    c.row
}

type Breakage = (RowRule, fn(&mut TaskRow));

/// One way to break each rule, starting from [`claimed_row`].
const BREAKAGES: [Breakage; 20] = [
    (RowRule::NotifiedUpToEvent, |r| {
        r.outbox.notified_version = 2
    }),
    (RowRule::DispatchUpToEvent, |r| {
        r.outbox.dispatch_version = 2
    }),
    (RowRule::EventIffFingerprint, |r| {
        r.outbox.fingerprint = None
    }),
    (RowRule::FingerprintOfEvent, |r| {
        r.outbox.fingerprint = Some(Fingerprint("0".repeat(64)))
    }),
    (RowRule::WorthSaying, |r| {
        let e = r.outbox.event.as_mut().unwrap();
        e.status = RemoteStatus::Working;
    }),
    (RowRule::EventOfThisTask, |r| {
        let e = r.outbox.event.take().unwrap();
        let (e, fp) = Event {
            task_id: "b".into(),
            ..e
        }
        .fingerprinted();
        (r.outbox.event, r.outbox.fingerprint) = (Some(e), Some(fp));
    }),
    (RowRule::InFlightFrozen, |r| r.outbox.dispatch_event = None),
    (RowRule::DispatchedHasRun, |r| {
        r.outbox.status = NotifyStatus::Dispatched
    }),
    (RowRule::FrozenUndelivered, |r| {
        r.outbox.notified_version = 1
    }),
    (RowRule::UndeliveredClaimable, |r| {
        r.outbox.status = NotifyStatus::Delivered
    }),
    (RowRule::NothingEmptyWaits, |r| {
        let o = &mut r.outbox;
        o.status = NotifyStatus::Pending;
        (o.event, o.fingerprint, o.dispatch_event) = (None, None, None);
    }),
    (RowRule::NotifyLeaseInFlight, |r| {
        r.outbox.status = NotifyStatus::Pending
    }),
    (RowRule::DeadLetterSettled, |r| {
        r.outbox.dead_letter = Some((1, DeadLetterReason::Budget))
    }),
    (RowRule::ErrorBounded, |r| {
        r.outbox.last_error = Some("e".repeat(MAX_STORED_ERROR + 1))
    }),
    (RowRule::TerminalNotPolled, |r| {
        r.remote.status = RemoteStatus::Completed
    }),
    (RowRule::PollErrorIffErrors, |r| {
        r.poll.consecutive_errors = 1
    }),
    (RowRule::CancelNeedsRequest, |r| {
        r.cancel.status = CancelStatus::Done
    }),
    (RowRule::CancelDueIffRequested, |r| {
        r.cancel.requested_at = Some(t(1));
        r.cancel.status = CancelStatus::Requested;
    }),
    (RowRule::CancelLeaseRequested, |r| {
        r.cancel.lease = r.outbox.lease.clone()
    }),
    (RowRule::LeaseIsNewestClaim, |r| r.outbox.claims = 7),
];

#[tokio::test]
async fn every_broken_rule_is_named() {
    let base = claimed_row().await;
    assert_eq!(base.check_invariants(), Ok(()));
    let mut named = Vec::new();
    for (rule, break_it) in BREAKAGES {
        let mut r = base.clone();
        break_it(&mut r);
        assert_eq!(r.check_invariants(), Err(rule), "{rule:?}");
        named.push(rule);
    }
    named.sort_by_key(|r| format!("{r:?}"));
    named.dedup();
    assert_eq!(named.len(), BREAKAGES.len(), "one breakage per rule");
}

#[tokio::test]
async fn the_outbox_rules_need_no_row() {
    let base = claimed_row().await;
    let mut o = base.outbox.clone();
    o.run_id = Some(RunId::from("run-1"));
    o.status = NotifyStatus::Dispatched;
    assert_eq!(o.check_invariants(), Ok(()));
    o.run_id = None;
    assert_eq!(o.check_invariants(), Err(RowRule::DispatchedHasRun));
}

/// A test-only transition with a planted bug: it claims the outbox without freezing a
/// snapshot, and ends like every real transition does, with the debug check.
fn claim_without_freezing(o: &mut Outbox, lease: Lease) {
    o.claims = lease.token.0;
    o.lease = Some(lease);
    o.status = NotifyStatus::Claimed;
    debug_check_outbox(o);
}

/// A pending outbox holding version 1 of task "a" (its notification lease released).
async fn pending_outbox() -> Outbox {
    let mut o = claimed_row().await.outbox;
    o.lease = None;
    o.dispatch_event = None;
    o.status = NotifyStatus::Pending;
    assert_eq!(o.check_invariants(), Ok(()));
    o
}

#[cfg(debug_assertions)]
#[tokio::test]
#[should_panic(expected = "task a: invariant broken: a dispatch in flight has a frozen snapshot")]
async fn a_transition_that_breaks_a_rule_panics_in_a_debug_build() {
    let mut o = pending_outbox().await;
    let lease = Lease {
        owner: "n".into(),
        token: LeaseToken(o.claims + 1),
        expires_at: t(60),
    };
    claim_without_freezing(&mut o, lease);
}

/// The panic message of `f`, if it panicked.
fn panic_message(f: impl FnOnce()) -> Option<String> {
    let payload = catch_unwind(AssertUnwindSafe(f)).err()?;
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
}

#[cfg(debug_assertions)]
#[tokio::test]
async fn the_real_transitions_and_store_writes_check_the_row() {
    use tasklatch_core::transitions::{outbox, poll};
    let base = claimed_row().await;
    let mut broken = base.clone();
    broken.outbox.notified_version = 2;
    let message = panic_message(|| poll::release(&mut broken.clone(), t(5)));
    assert_eq!(
        message.as_deref(),
        Some("task a: invariant broken: notified_version ≤ event_version")
    );
    let message = panic_message(|| outbox::release(&mut broken.outbox.clone(), t(5), None));
    assert!(message.is_some_and(|m| m.contains("notified_version")));
    let store = MemStore::new(Policy::default());
    let insert = store.insert_task(broken.clone());
    let message = panic_message(|| drop(support::ready(insert)));
    let message = message.expect("the store checks the row it writes");
    assert!(message.starts_with("task a: invariant broken"), "{message}");
    assert!(
        !message.contains("remote-a") && !message.contains("driver-a"),
        "no secret in {message}"
    );
}

/// While a planted bug is active the check does not panic: it records the breach (task id and
/// rule) for the simulation to drain.
#[cfg(feature = "mutations")]
#[tokio::test]
async fn the_check_records_instead_of_panicking_while_a_planted_bug_is_active() {
    use tasklatch_core::mutation::{activate, take_invariant_breaches, InvariantBreach, Mutant};
    let mut o = pending_outbox().await;
    let lease = Lease {
        owner: "n".into(),
        token: LeaseToken(o.claims + 1),
        expires_at: t(60),
    };
    let _on = activate(Some(Mutant::InFlightSnapshotOverwritten));
    claim_without_freezing(&mut o, lease);
    assert_eq!(o.check_invariants(), Err(RowRule::InFlightFrozen));
    let recorded = InvariantBreach {
        task: "a".into(),
        rule: RowRule::InFlightFrozen,
    };
    assert_eq!(take_invariant_breaches(), vec![recorded]);
    assert_eq!(take_invariant_breaches(), Vec::new());
}
