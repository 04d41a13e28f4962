//! DOMAIN §2 (events and the version pair) and §3 (notification states): one test per row of
//! the §3 table, then the §2 rules, on a bare `Outbox` through the pure transitions.

mod support;

use support::*;
use tasklatch_core::event::{Event, Fingerprint};
use tasklatch_core::ids::{RunId, TaskId};
use tasklatch_core::lease::{LeaseKind, Refusal};
use tasklatch_core::policy::{Policy, FAILURE_BUDGET};
use tasklatch_core::remote::ErrorClass;
use tasklatch_core::status::{DeadLetterReason, NotifyStatus, RemoteStatus};
use tasklatch_core::store::{ClaimRequest, NotifyWrite, Store};
use tasklatch_core::task::{Outbox, TaskRow};
use tasklatch_core::time::Timestamp;
use tasklatch_core::transitions::guard;
use tasklatch_core::transitions::outbox::{
    apply_action, claim, claimable, idempotency_key, record_event, release, NotifyAction, Recorded,
};
use tasklatch_core::transitions::submit::new_row;

// ------------------------------------------------------------------------------------------
// helpers
// ------------------------------------------------------------------------------------------

const TASK: &str = "tsk_1";

fn policy() -> Policy {
    Policy::default()
}

fn task() -> TaskId {
    TaskId::from(TASK)
}

fn ev(status: RemoteStatus) -> Option<(Event, Fingerprint)> {
    event_with(&identity(TASK, "build"), status, None)
}

fn done(result: &str) -> Option<(Event, Fingerprint)> {
    event_with(
        &identity(TASK, "build"),
        RemoteStatus::Completed,
        Some(result),
    )
}

fn degraded(class: ErrorClass, text: &str) -> Option<(Event, Fingerprint)> {
    degraded_event(&identity(TASK, "build"), class, text)
}

fn key(o: &Outbox) -> String {
    idempotency_key(&task(), o)
}

fn run(n: u32) -> RunId {
    RunId(format!("run-{n}"))
}

/// Claims `o` at `now` as the next claim would (asserting it is claimable).
fn take(o: &mut Outbox, now: Timestamp) {
    assert!(claimable(o, now), "expected claimable at {now:?}: {o:?}");
    let l = lease("w1", o.claims + 1, now.plus(policy().notify_lease));
    claim(o, l);
}

fn take_due(o: &mut Outbox) {
    let due = o.due_at;
    take(o, due);
}

fn act_due(o: &mut Outbox, action: NotifyAction) {
    let due = o.due_at;
    act(o, action, due);
}

fn act(o: &mut Outbox, action: NotifyAction, now: Timestamp) {
    apply_action(o, action, now, &policy());
}

/// Version 1 (input_required) recorded at T0: pending.
fn pending_v1() -> Outbox {
    let mut o = Outbox::empty(T0);
    assert_eq!(
        record_event(&mut o, ev(RemoteStatus::InputRequired), T0),
        Recorded::NewVersion(1)
    );
    o
}

fn claimed_v1() -> Outbox {
    let mut o = pending_v1();
    take(&mut o, T0);
    o
}

fn dispatched_v1() -> Outbox {
    let mut o = claimed_v1();
    act(&mut o, NotifyAction::Launched(run(1)), at(1));
    o
}

/// Dispatched, the run failed once: retry with attempt 1, failures 1, due at(11).
fn retry_v1() -> Outbox {
    let mut o = dispatched_v1();
    act(
        &mut o,
        NotifyAction::RunFailed("run ended: error".into()),
        at(6),
    );
    o
}

fn delivered_v1() -> Outbox {
    let mut o = dispatched_v1();
    act(&mut o, NotifyAction::RunSucceeded, at(11));
    o
}

fn dead_v1() -> Outbox {
    let mut o = claimed_v1();
    act(&mut o, NotifyAction::ThreadGone, at(1));
    o
}

fn frozen(o: &Outbox) -> (u64, Option<Event>, u32, Option<RunId>) {
    (
        o.dispatch_version,
        o.dispatch_event.clone(),
        o.dispatch_attempt,
        o.run_id.clone(),
    )
}

// ------------------------------------------------------------------------------------------
// §3 table, row by row
// ------------------------------------------------------------------------------------------

#[test]
fn row_none_pending_delivered_dead_letter_to_pending_on_a_new_version() {
    // none
    let mut o = Outbox::empty(T0);
    assert_eq!(o.status, NotifyStatus::None);
    assert_eq!(
        record_event(&mut o, ev(RemoteStatus::Completed), at(3)),
        Recorded::NewVersion(1)
    );
    assert_eq!(o.status, NotifyStatus::Pending);
    assert_eq!(o.due_at, at(3), "due now");
    assert_eq!(o.event_version, 1);
    assert!(o.event.is_some() && o.fingerprint.is_some());

    // pending (never claimed): stays pending, due now, nothing frozen
    let mut o = pending_v1();
    assert_eq!(
        record_event(&mut o, done("1"), at(7)),
        Recorded::NewVersion(2)
    );
    assert_eq!(
        (o.status, o.due_at, o.dispatch_event.is_none()),
        (NotifyStatus::Pending, at(7), true)
    );

    // delivered: counters and dispatch fields reset
    let mut o = dispatched_v1();
    act(&mut o, NotifyAction::RunFailed("flaky".into()), at(11));
    take(&mut o, at(20));
    act(&mut o, NotifyAction::RunSucceeded, at(21));
    assert_eq!(o.status, NotifyStatus::Delivered);
    assert_eq!(o.failures, 1, "the failure of v1 is still on the row");
    assert_eq!(
        record_event(&mut o, done("1"), at(30)),
        Recorded::NewVersion(2)
    );
    assert_eq!(o.status, NotifyStatus::Pending);
    assert_eq!(o.due_at, at(30));
    assert_eq!(
        (
            o.failures,
            o.dispatch_attempt,
            o.run_id.clone(),
            o.last_error.clone()
        ),
        (0, 0, None, None),
        "a reopened channel starts with fresh counters"
    );
    assert!(claimable(&o, at(30)));

    // dead_letter
    let mut o = dead_v1();
    assert_eq!(o.status, NotifyStatus::DeadLetter);
    assert_eq!(
        record_event(&mut o, done("1"), at(30)),
        Recorded::NewVersion(2)
    );
    assert_eq!(o.status, NotifyStatus::Pending);
    assert!(claimable(&o, at(30)));
}

#[test]
fn row_pending_claimed_retry_with_older_dispatch_version_to_claimed_freezing_the_snapshot() {
    // pending → claimed
    let mut o = pending_v1();
    take(&mut o, at(1));
    assert_eq!(o.status, NotifyStatus::Claimed);
    assert_eq!(o.dispatch_version, 1);
    assert_eq!(
        o.dispatch_event, o.event,
        "the snapshot is the event at claim time"
    );
    assert_eq!((o.dispatch_attempt, o.failures), (0, 0));
    assert_eq!(o.lease.as_ref().map(|l| l.expires_at), Some(at(61)));

    // claimed (lease expired, one counted release) with a newer version → refrozen, reset
    let mut o = claimed_v1();
    release(&mut o, at(5), Some("unexpected"));
    assert_eq!(o.failures, 1);
    record_event(&mut o, done("v2"), at(6));
    assert_eq!(o.dispatch_version, 1, "recorded only while in flight");
    take(&mut o, at(70));
    assert_eq!(o.status, NotifyStatus::Claimed);
    assert_eq!(o.dispatch_version, 2);
    assert_eq!(
        o.dispatch_event.as_ref().map(|e| e.status),
        Some(RemoteStatus::Completed)
    );
    assert_eq!(
        (o.dispatch_attempt, o.failures),
        (0, 0),
        "a new version resets the counters"
    );

    // retry with an older dispatch version → refrozen, reset
    let mut o = retry_v1();
    assert_eq!((o.dispatch_attempt, o.failures), (1, 1));
    record_event(&mut o, done("v2"), at(7));
    take(&mut o, at(11));
    assert_eq!(o.dispatch_version, 2);
    assert_eq!(o.dispatch_event, o.event);
    assert_eq!((o.dispatch_attempt, o.failures), (0, 0));
    assert!(o.status.in_flight() && o.status != NotifyStatus::Dispatched);
    assert_eq!(key(&o), "task:tsk_1:2:0");
}

/// DOMAIN §3: "pending, claimed, retry with an older dispatch_version → claimed".
#[test]
fn row_retry_with_older_dispatch_version_is_labelled_claimed() {
    let mut o = retry_v1();
    record_event(&mut o, done("v2"), at(7));
    take(&mut o, at(11));
    assert_eq!(o.status, NotifyStatus::Claimed);
}

#[test]
fn row_retry_same_version_and_dispatched_are_leased_without_rebuilding_the_snapshot() {
    // retry, same version
    let mut o = retry_v1();
    let before = frozen(&o);
    take(&mut o, at(11));
    assert_eq!(o.status, NotifyStatus::Retry);
    assert_eq!(frozen(&o), before);
    // … even when attention cleared since the snapshot was frozen
    let mut cleared = retry_v1();
    record_event(&mut cleared, None, at(7));
    take(&mut cleared, at(11));
    assert_eq!(
        frozen(&cleared),
        before,
        "the snapshot is kept, never emptied"
    );
    assert_eq!(o.failures, 1, "the same version keeps its counted failures");
    assert_eq!(key(&o), "task:tsk_1:1:1");
    assert!(o.lease.is_some());

    // dispatched, even with a newer version waiting
    let mut o = dispatched_v1();
    record_event(&mut o, done("v2"), at(5));
    let before = frozen(&o);
    take(&mut o, at(11));
    assert_eq!(o.status, NotifyStatus::Dispatched);
    assert_eq!(
        frozen(&o),
        before,
        "the run in flight is looked at, not replaced"
    );
    assert_eq!(o.run_id, Some(run(1)));
    assert!(o.lease.is_some());

    // claimed, same version, lease expired: the snapshot is kept as well
    let mut o = claimed_v1();
    let before = frozen(&o);
    assert!(!claimable(&o, at(59)), "lease still held");
    take(&mut o, at(60));
    assert_eq!((o.status, frozen(&o)), (NotifyStatus::Claimed, before));
}

#[test]
fn row_claimed_or_retry_to_dispatched_when_the_launcher_accepts_the_run() {
    for (mut o, name) in [(claimed_v1(), "claimed"), (retry_v1(), "retry")] {
        if o.status == NotifyStatus::Retry {
            take(&mut o, at(11));
        }
        let snapshot = o.dispatch_event.clone();
        act(&mut o, NotifyAction::Launched(run(7)), at(12));
        assert_eq!(o.status, NotifyStatus::Dispatched, "{name}");
        assert_eq!(o.run_id, Some(run(7)), "{name}");
        assert_eq!(o.dispatch_event, snapshot, "{name}");
        assert_eq!(o.due_at, at(12).plus(policy().run_check_interval), "{name}");
        assert!(o.lease.is_none(), "{name}: the write releases the lease");
    }
}

#[test]
fn row_claimed_or_retry_to_pending_on_409_dropping_the_snapshot_without_a_failure() {
    // claimed: a newer version arrived during the claim; 409 → the next claim takes the latest
    let mut o = claimed_v1();
    record_event(&mut o, done("v2"), at(2));
    act(&mut o, NotifyAction::Busy, at(3));
    assert_eq!(o.status, NotifyStatus::Pending);
    assert_eq!(o.dispatch_event, None, "the frozen snapshot is dropped");
    assert_eq!((o.failures, o.busy_count), (0, 1));
    assert_eq!(o.due_at, at(3).plus(policy().run_check_interval));
    assert!(!claimable(&o, at(12)));
    take(&mut o, at(13));
    assert_eq!(o.dispatch_version, 2);
    assert_eq!(o.dispatch_event, o.event, "rebuilt from the latest event");
    assert_eq!(key(&o), "task:tsk_1:2:0");

    // retry: its counted failure stays, the 409 adds none; the same version keeps its counters
    let mut o = retry_v1();
    take(&mut o, at(11));
    act(&mut o, NotifyAction::Busy, at(12));
    assert_eq!(
        (o.status, o.failures, o.busy_count),
        (NotifyStatus::Pending, 1, 1)
    );
    assert_eq!(o.dispatch_event, None);
    take_due(&mut o);
    assert_eq!(
        o.dispatch_event, o.event,
        "rebuilt from the (same) latest event"
    );
    assert_eq!(
        (o.failures, o.dispatch_attempt),
        (1, 1),
        "the same version is not reset"
    );
    assert_eq!(key(&o), "task:tsk_1:1:1");
}

#[test]
fn row_claimed_or_retry_to_dead_letter_on_404() {
    for (mut o, name) in [(claimed_v1(), "claimed"), (retry_v1(), "retry")] {
        if o.status == NotifyStatus::Retry {
            take(&mut o, at(11));
        }
        let failures = o.failures;
        act(&mut o, NotifyAction::ThreadGone, at(12));
        assert_eq!(o.status, NotifyStatus::DeadLetter, "{name}");
        assert_eq!(
            o.dead_letter,
            Some((1, DeadLetterReason::ThreadGone)),
            "{name}"
        );
        assert_eq!(o.notified_version, 1, "{name}: settled");
        assert_eq!(
            o.failures, failures,
            "{name}: permanent, not a counted retry"
        );
        assert!(!claimable(&o, at(100_000)), "{name}: no retry, ever");
    }
}

#[test]
fn row_claimed_or_retry_to_pending_counted_on_another_launch_error_with_the_same_key() {
    let mut o = claimed_v1();
    let key_before = key(&o);
    act(
        &mut o,
        NotifyAction::LaunchFailed("gateway 502".into()),
        at(2),
    );
    assert_eq!(o.status, NotifyStatus::Pending);
    assert_eq!(o.failures, 1);
    assert_eq!(o.last_error.as_deref(), Some("gateway 502"));
    assert_eq!(
        o.due_at,
        at(2).plus(policy().retry_delay(1)),
        "after backoff"
    );
    assert!(!claimable(&o, at(6)));
    take(&mut o, at(7));
    assert_eq!(key(&o), key_before, "the same idempotency key is retried");
    assert_eq!(o.status, NotifyStatus::Claimed);

    let mut o = retry_v1();
    take(&mut o, at(11));
    let key_before = key(&o);
    act(
        &mut o,
        NotifyAction::LaunchFailed("gateway 502".into()),
        at(12),
    );
    assert_eq!((o.status, o.failures), (NotifyStatus::Pending, 2));
    assert_eq!(o.due_at, at(12).plus(policy().retry_delay(2)));
    take_due(&mut o);
    assert_eq!(key(&o), key_before);
    assert_eq!(key_before, "task:tsk_1:1:1");
}

#[test]
fn row_dispatched_to_delivered_on_success_or_to_pending_when_newer() {
    let mut o = dispatched_v1();
    take(&mut o, at(11));
    act(&mut o, NotifyAction::RunSucceeded, at(11));
    assert_eq!(o.status, NotifyStatus::Delivered);
    assert_eq!((o.notified_version, o.event_version), (1, 1));
    assert!(!o.has_undelivered() && !claimable(&o, at(1_000)));
    assert_eq!((o.dispatch_event.clone(), o.run_id.clone()), (None, None));

    let mut o = dispatched_v1();
    record_event(&mut o, done("v2"), at(5));
    take(&mut o, at(11));
    act(&mut o, NotifyAction::RunSucceeded, at(11));
    assert_eq!(
        o.status,
        NotifyStatus::Pending,
        "a newer version arrived meanwhile"
    );
    assert_eq!((o.notified_version, o.event_version), (1, 2));
    take(&mut o, at(11));
    assert_eq!(key(&o), "task:tsk_1:2:0");
}

#[test]
fn row_dispatched_to_retry_when_the_run_failed_with_a_new_attempt_and_backoff() {
    let mut o = dispatched_v1();
    take(&mut o, at(11));
    act(
        &mut o,
        NotifyAction::RunFailed("run ended: timeout".into()),
        at(11),
    );
    assert_eq!(o.status, NotifyStatus::Retry);
    assert_eq!((o.dispatch_attempt, o.failures), (1, 1));
    assert_eq!(o.run_id, None);
    assert_eq!(o.due_at, at(11).plus(policy().retry_delay(1)));
    take_due(&mut o);
    assert_eq!(key(&o), "task:tsk_1:1:1");
    act(&mut o, NotifyAction::Launched(run(2)), at(20));
    take(&mut o, at(30));
    act(
        &mut o,
        NotifyAction::RunFailed("run ended: interrupted".into()),
        at(30),
    );
    assert_eq!((o.dispatch_attempt, o.failures), (2, 2));
    assert_eq!(
        o.due_at,
        at(30).plus(policy().retry_base * 2),
        "the backoff doubles"
    );
}

#[test]
fn row_dispatched_stays_dispatched_while_the_run_is_going_without_a_failure() {
    let mut o = dispatched_v1();
    take(&mut o, at(11));
    act(&mut o, NotifyAction::RunPending, at(11));
    assert_eq!(o.status, NotifyStatus::Dispatched);
    assert_eq!(o.run_id, Some(run(1)));
    assert_eq!(o.failures, 0);
    assert_eq!(o.due_at, at(11).plus(policy().run_check_interval));
    assert!(o.lease.is_none());
}

#[test]
fn row_in_flight_to_dead_letter_when_the_budget_is_spent_unless_newer() {
    let retry_claimed = || {
        let mut o = retry_v1();
        take(&mut o, at(11));
        o
    };
    let dispatched_claimed = || {
        let mut o = dispatched_v1();
        take(&mut o, at(11));
        o
    };
    for (make, name) in [
        (&claimed_v1 as &dyn Fn() -> Outbox, "claimed"),
        (&dispatched_claimed, "dispatched"),
        (&retry_claimed, "retry"),
    ] {
        let mut o = make();
        act(&mut o, NotifyAction::BudgetExhausted, at(12));
        assert_eq!(o.status, NotifyStatus::DeadLetter, "{name}");
        assert_eq!(o.dead_letter, Some((1, DeadLetterReason::Budget)), "{name}");
        assert_eq!(o.notified_version, 1, "{name}");

        let mut o = make();
        record_event(&mut o, done("v2"), at(11));
        act(&mut o, NotifyAction::BudgetExhausted, at(12));
        assert_eq!(
            o.status,
            NotifyStatus::Pending,
            "{name}: the channel lives on"
        );
        assert_eq!(o.dead_letter, Some((1, DeadLetterReason::Budget)), "{name}");
        assert_eq!((o.notified_version, o.event_version), (1, 2), "{name}");
        assert_eq!((o.failures, o.dispatch_event.clone()), (0, None), "{name}");
        take(&mut o, at(12));
        assert_eq!(key(&o), "task:tsk_1:2:0", "{name}");
    }
}

#[test]
fn claimable_needs_a_claimable_status_undelivered_work_due_time_and_a_free_lease() {
    assert!(!claimable(&Outbox::empty(T0), T0), "none");
    assert!(!claimable(&delivered_v1(), at(1_000)), "delivered");
    assert!(!claimable(&dead_v1(), at(1_000)), "dead letter");
    let o = pending_v1();
    assert!(claimable(&o, T0));
    assert!(!claimable(&o, T0.minus(secs(1))), "not due yet");
    let o = claimed_v1();
    assert!(!claimable(&o, at(59)), "lease held");
    assert!(claimable(&o, at(60)), "lease expired");
    let o = retry_v1();
    assert!(
        !claimable(&o, at(10)) && claimable(&o, at(11)),
        "retry after backoff"
    );
    let mut o = dispatched_v1();
    assert!(
        !claimable(&o, at(10)) && claimable(&o, at(11)),
        "dispatched check"
    );
    // dispatched but nothing undelivered is impossible; an outbox whose work was settled is not
    o.notified_version = o.event_version;
    assert!(!claimable(&o, at(11)));
}

#[tokio::test]
async fn notification_writes_are_guarded_by_lease_token_expiry_and_dispatch_version() {
    let store = TestStore::new(policy());
    let row = new_row(
        identity(TASK, "build"),
        Some(Ok(observed(RemoteStatus::InputRequired))),
        T0,
        &policy(),
    );
    store.insert_task(row).await.unwrap();
    let req = |worker: &str, now| ClaimRequest {
        worker: worker.into(),
        now,
        lease_for: secs(60),
        limit: 10,
    };
    let first = store.claim(LeaseKind::Notify, req("w1", T0)).await.unwrap();
    let first = first.into_iter().next().expect("claimed");
    // expired at the write's time
    let write = |lease, action| NotifyWrite {
        task_id: task(),
        lease,
        dispatch_version: 1,
        action,
    };
    let before = store.row(&task()).await;
    let out = store
        .finish_notifications(vec![write(first.lease.clone(), NotifyAction::Busy)], at(60))
        .await
        .unwrap();
    assert_eq!(out, vec![Err(Refusal::LeaseExpired)]);
    assert_eq!(
        store.row(&task()).await,
        before,
        "a refused write changes nothing"
    );
    // superseded by a new claim of the same worker: the old token is refused
    let second = store
        .claim(LeaseKind::Notify, req("w1", at(61)))
        .await
        .unwrap();
    let second = second.into_iter().next().expect("re-claimed");
    assert!(second.lease.token > first.lease.token);
    let before = store.row(&task()).await;
    let out = store
        .finish_notifications(vec![write(first.lease.clone(), NotifyAction::Busy)], at(62))
        .await
        .unwrap();
    assert_eq!(out, vec![Err(Refusal::LeaseNotHeld)]);
    assert_eq!(store.row(&task()).await, before);
    // a moved dispatch version is refused even under the right lease
    let mut moved = store.row(&task()).await;
    moved.outbox.dispatch_version = 2;
    assert_eq!(
        guard::notify_write(&moved, &second.lease, 1, at(62)),
        Err(Refusal::VersionMoved)
    );
    // the current claim writes
    let out = store
        .finish_notifications(
            vec![write(second.lease.clone(), NotifyAction::Busy)],
            at(62),
        )
        .await
        .unwrap();
    assert!(out[0].is_ok());
    assert_eq!(store.row(&task()).await.outbox.busy_count, 1);
}

fn observed(status: RemoteStatus) -> tasklatch_core::snapshot::Observed {
    tasklatch_core::snapshot::Observed {
        status,
        result: None,
        result_truncated: false,
        artifact: None,
        error: None,
        input_request: Some("which branch?".into()),
        poll_hint: None,
    }
}

// ------------------------------------------------------------------------------------------
// §2 and the rules of the brief
// ------------------------------------------------------------------------------------------

#[test]
fn same_fingerprint_changes_nothing_in_any_state() {
    for (mut o, name) in [
        (pending_v1(), "pending"),
        (claimed_v1(), "claimed"),
        (dispatched_v1(), "dispatched"),
        (retry_v1(), "retry"),
        (delivered_v1(), "delivered"),
        (dead_v1(), "dead letter"),
    ] {
        let before = o.clone();
        assert_eq!(
            record_event(&mut o, ev(RemoteStatus::InputRequired), at(500)),
            Recorded::Unchanged,
            "{name}"
        );
        assert_eq!(
            o, before,
            "{name}: a re-poll of an unchanged state never notifies"
        );
    }
}

#[test]
fn new_fingerprint_bumps_the_version_by_exactly_one() {
    let mut o = pending_v1();
    for (i, result) in ["a", "b", "c"].iter().enumerate() {
        let fp = done(result).map(|(_, fp)| fp);
        assert_eq!(
            record_event(&mut o, done(result), at(i as u64)),
            Recorded::NewVersion(i as u64 + 2)
        );
        assert_eq!(o.event_version, i as u64 + 2);
        assert_eq!(o.fingerprint, fp, "the new fingerprint is stored");
    }
    assert_eq!(o.notified_version, 0);
}

#[test]
fn channel_reopens_only_when_nothing_is_in_flight() {
    for (mut o, name) in [
        (claimed_v1(), "claimed"),
        (dispatched_v1(), "dispatched"),
        (retry_v1(), "retry"),
    ] {
        let (status, due, lease) = (o.status, o.due_at, o.lease.clone());
        let (failures, attempt) = (o.failures, o.dispatch_attempt);
        assert_eq!(
            record_event(&mut o, done("v2"), at(3)),
            Recorded::NewVersion(2)
        );
        assert_eq!(
            (o.status, o.due_at, o.lease.clone()),
            (status, due, lease),
            "{name}"
        );
        assert_eq!(
            (o.failures, o.dispatch_attempt),
            (failures, attempt),
            "{name}"
        );
        assert_eq!(
            o.event.as_ref().map(|e| e.status),
            Some(RemoteStatus::Completed)
        );
    }
    let mut o = delivered_v1();
    record_event(&mut o, done("v2"), at(30));
    assert_eq!((o.status, o.due_at), (NotifyStatus::Pending, at(30)));
}

#[test]
fn in_flight_snapshot_is_never_overwritten_by_newer_versions() {
    let mut o = claimed_v1();
    let snapshot = frozen(&o);
    let k = key(&o);
    record_event(&mut o, done("v2"), at(1));
    record_event(&mut o, ev(RemoteStatus::Failed), at(2));
    assert_eq!(frozen(&o), snapshot);
    act(&mut o, NotifyAction::Launched(run(1)), at(3));
    record_event(&mut o, done("v4"), at(4));
    assert_eq!(o.dispatch_event, snapshot.1);
    assert_eq!(o.dispatch_version, 1);
    take(&mut o, at(13));
    assert_eq!(
        o.dispatch_event, snapshot.1,
        "a dispatched claim keeps the snapshot"
    );
    act(&mut o, NotifyAction::RunFailed("boom".into()), at(13));
    record_event(&mut o, done("v5"), at(14));
    assert_eq!(o.dispatch_event, snapshot.1, "retry keeps the snapshot");
    assert_eq!(o.event_version, 5);
    assert_eq!(k, "task:tsk_1:1:0");
}

#[test]
fn attention_clearing_retires_the_fingerprint_and_drops_eventless_versions() {
    // degrade → recover → degrade, nothing delivered in between: two versions, never empty
    let mut o = Outbox::empty(T0);
    assert_eq!(
        record_event(&mut o, degraded(ErrorClass::Timeout, "t/o"), at(1)),
        Recorded::NewVersion(1)
    );
    assert_eq!(record_event(&mut o, None, at(2)), Recorded::Cleared);
    assert_eq!((o.fingerprint.clone(), o.event.clone()), (None, None));
    assert_eq!(o.notified_version, 1, "the eventless version is dropped");
    assert_eq!(o.status, NotifyStatus::None);
    assert!(!claimable(&o, at(1_000)), "nothing empty is ever sent");
    assert_eq!(
        record_event(&mut o, degraded(ErrorClass::Timeout, "t/o"), at(3)),
        Recorded::NewVersion(2),
        "the retired fingerprint does not suppress the second degradation"
    );
    assert_eq!(o.status, NotifyStatus::Pending);
    take(&mut o, at(3));
    assert!(o
        .dispatch_event
        .as_ref()
        .is_some_and(|e| e.tracking_degraded));

    // degrade (delivered) → recover → degrade: notifies twice
    let mut o = Outbox::empty(T0);
    record_event(&mut o, degraded(ErrorClass::Timeout, "t/o"), at(1));
    take(&mut o, at(1));
    act(&mut o, NotifyAction::Launched(run(1)), at(1));
    take(&mut o, at(11));
    act(&mut o, NotifyAction::RunSucceeded, at(11));
    assert_eq!(record_event(&mut o, None, at(12)), Recorded::Cleared);
    assert_eq!(o.status, NotifyStatus::Delivered);
    assert_eq!(
        record_event(&mut o, degraded(ErrorClass::Timeout, "t/o"), at(13)),
        Recorded::NewVersion(2)
    );
    assert!(claimable(&o, at(13)));
}

#[test]
fn attention_clearing_in_flight_keeps_the_snapshot_then_drops_the_eventless_versions() {
    let mut o = Outbox::empty(T0);
    record_event(&mut o, degraded(ErrorClass::Server, "502"), at(1));
    take(&mut o, at(1));
    act(&mut o, NotifyAction::Launched(run(1)), at(1));
    // a newer attention version arrives, then attention clears, while v1 is in flight
    record_event(&mut o, ev(RemoteStatus::InputRequired), at(2));
    let snapshot = frozen(&o);
    assert_eq!(record_event(&mut o, None, at(3)), Recorded::Cleared);
    assert_eq!(frozen(&o), snapshot, "in flight: the snapshot stays");
    assert_eq!(o.status, NotifyStatus::Dispatched);
    take(&mut o, at(11));
    act(&mut o, NotifyAction::RunSucceeded, at(11));
    assert_eq!(o.status, NotifyStatus::Delivered);
    assert_eq!(
        (o.notified_version, o.event_version),
        (2, 2),
        "v2 has no event left: dropped"
    );
    assert!(!claimable(&o, at(1_000)));

    // a 409 while attention is cleared drops the undelivered work instead of sending nothing
    let mut o = claimed_v1();
    record_event(&mut o, None, at(2));
    act(&mut o, NotifyAction::Busy, at(3));
    assert!(!o.has_undelivered());
    assert_eq!(o.status, NotifyStatus::None);
    assert!(!claimable(&o, at(1_000)));
}

#[test]
fn degraded_error_text_change_alone_makes_no_new_version() {
    let mut o = Outbox::empty(T0);
    record_event(&mut o, degraded(ErrorClass::Timeout, "after 5s"), at(1));
    let before = o.clone();
    assert_eq!(
        record_event(
            &mut o,
            degraded(ErrorClass::Timeout, "after 9s (req 7f3a)"),
            at(2)
        ),
        Recorded::Unchanged
    );
    assert_eq!(o, before);
    assert_eq!(
        record_event(&mut o, degraded(ErrorClass::Server, "after 5s"), at(3)),
        Recorded::NewVersion(2),
        "a different class is a different event"
    );
}

#[tokio::test]
async fn busy_409_is_not_counted_but_visible_in_the_row_and_the_overview() {
    let mut o = claimed_v1();
    for i in 0..3u64 {
        act(&mut o, NotifyAction::Busy, at(10 * i + 1));
        assert_eq!(o.failures, 0);
        take_due(&mut o);
    }
    assert_eq!(o.busy_count, 3);
    assert!(o.failures < FAILURE_BUDGET);

    let store = TestStore::new(policy());
    let row = new_row(
        identity(TASK, "build"),
        Some(Ok(observed(RemoteStatus::InputRequired))),
        T0,
        &policy(),
    );
    store.insert_task(row).await.unwrap();
    let claimed = store
        .claim(
            LeaseKind::Notify,
            ClaimRequest {
                worker: "w1".into(),
                now: T0,
                lease_for: secs(60),
                limit: 1,
            },
        )
        .await
        .unwrap();
    let lease = claimed[0].lease.clone();
    store
        .finish_notifications(
            vec![NotifyWrite {
                task_id: task(),
                lease,
                dispatch_version: 1,
                action: NotifyAction::Busy,
            }],
            T0,
        )
        .await
        .unwrap();
    let overview = store.overview().await.unwrap();
    assert_eq!(overview.busy_total, 1);
    let row: TaskRow = store.row(&task()).await;
    assert_eq!((row.outbox.busy_count, row.outbox.failures), (1, 0));
}

#[test]
fn thread_gone_404_dead_letters_at_once_and_a_later_event_revives_the_channel() {
    let mut o = claimed_v1();
    act(&mut o, NotifyAction::ThreadGone, at(1));
    assert_eq!(o.status, NotifyStatus::DeadLetter);
    assert_eq!(o.failures, 0, "no retry was needed to get there");
    assert!(!claimable(&o, at(100_000)));
    record_event(&mut o, done("v2"), at(50));
    assert_eq!(o.status, NotifyStatus::Pending);
    take(&mut o, at(50));
    assert_eq!(key(&o), "task:tsk_1:2:0");
    assert_eq!(
        o.dead_letter,
        Some((1, DeadLetterReason::ThreadGone)),
        "still visible"
    );
}

#[test]
fn launch_error_is_counted_and_keeps_the_idempotency_key() {
    let mut o = claimed_v1();
    let k = key(&o);
    for n in 1..=3u32 {
        act(
            &mut o,
            NotifyAction::LaunchFailed(format!("502 #{n}")),
            at(n as u64),
        );
        assert_eq!(o.failures, n);
        assert_eq!(o.dispatch_attempt, 0);
        take_due(&mut o);
        assert_eq!(
            key(&o),
            k,
            "a launch error may have created the run: same key"
        );
    }
}

#[test]
fn failed_run_bumps_the_attempt_so_the_next_run_gets_a_new_key() {
    let mut o = dispatched_v1();
    let mut keys = vec![key(&o)];
    for n in 1..=3u32 {
        take_due(&mut o);
        act_due(&mut o, NotifyAction::RunFailed("run ended: error".into()));
        assert_eq!((o.dispatch_attempt, o.failures), (n, n));
        take_due(&mut o);
        keys.push(key(&o));
        act_due(&mut o, NotifyAction::Launched(run(n + 1)));
    }
    assert_eq!(
        keys,
        [
            "task:tsk_1:1:0",
            "task:tsk_1:1:1",
            "task:tsk_1:1:2",
            "task:tsk_1:1:3"
        ]
    );
}

#[test]
fn budget_dead_letters_only_the_snapshot_and_a_newer_version_goes_pending() {
    // alone: the snapshot is dead-lettered and the channel rests
    let mut o = dispatched_v1();
    for _ in 0..FAILURE_BUDGET {
        take_due(&mut o);
        if o.status == NotifyStatus::Retry {
            act_due(&mut o, NotifyAction::Launched(run(9)));
            take_due(&mut o);
        }
        act_due(&mut o, NotifyAction::RunFailed("error".into()));
    }
    assert_eq!(
        (o.status, o.failures),
        (NotifyStatus::Retry, FAILURE_BUDGET)
    );
    let mut alone = o.clone();
    take_due(&mut alone);
    act_due(&mut alone, NotifyAction::BudgetExhausted);
    assert_eq!(alone.status, NotifyStatus::DeadLetter);
    assert_eq!(alone.dead_letter, Some((1, DeadLetterReason::Budget)));
    assert!(!claimable(&alone, at(1_000_000)));

    // a newer version recorded during the last claim: the channel goes on with it
    take_due(&mut o);
    assert_eq!(o.dispatch_version, 1);
    let due = o.due_at;
    record_event(&mut o, done("v2"), due);
    act_due(&mut o, NotifyAction::BudgetExhausted);
    assert_eq!(o.dead_letter, Some((1, DeadLetterReason::Budget)));
    assert_eq!(o.status, NotifyStatus::Pending);
    assert_eq!((o.failures, o.notified_version), (0, 1));
    take_due(&mut o);
    assert_eq!(key(&o), "task:tsk_1:2:0");
    act_due(&mut o, NotifyAction::Launched(run(10)));
    take_due(&mut o);
    act_due(&mut o, NotifyAction::RunSucceeded);
    assert_eq!((o.status, o.notified_version), (NotifyStatus::Delivered, 2));
}
