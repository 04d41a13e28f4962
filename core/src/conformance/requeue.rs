//! An operator's requeue of a dead-lettered notification (`Store::requeue_dead_letter`).

use super::support::*;
use crate::lease::LeaseKind;
use crate::status::{DeadLetterReason, NotifyStatus, RemoteStatus};
use crate::store::*;
use crate::transitions::outbox::{idempotency_key, NotifyAction};

/// A budget dead letter requeued: the latest event is due again as a new version, frozen under
/// a fresh key with a fresh budget; the old dead letter stays recorded; a second requeue of
/// the now pending row changes nothing.
pub async fn requeue_redelivers_the_latest_event_with_a_fresh_budget<S: Store>(s: &S) {
    let c = with_event(s, RemoteStatus::Completed).await;
    notify(s, &c, NotifyAction::LaunchFailed("boom".into()), 2)
        .await
        .unwrap();
    let c = claim(s, LeaseKind::Notify, "n2", t(10_000), 10)
        .await
        .remove(0);
    assert_eq!(c.row.outbox.failures, 1);
    let out = notify(s, &c, NotifyAction::BudgetExhausted, 10_001)
        .await
        .unwrap();
    assert_eq!(out.notify_status, NotifyStatus::DeadLetter);

    let got = s.requeue_dead_letter(&"a".into(), t(10_002)).await.unwrap();
    assert_eq!(got, RequeueOutcome::Requeued(2));
    let r = row(s, "a").await;
    assert_eq!((r.outbox.event_version, r.outbox.notified_version), (2, 1));
    assert_eq!(r.outbox.status, NotifyStatus::Pending);
    assert_eq!(r.outbox.due_at, t(10_002));
    assert_eq!(
        (r.outbox.failures, r.outbox.last_error.as_deref()),
        (0, None)
    );
    assert_eq!(r.outbox.dead_letter, Some((1, DeadLetterReason::Budget)));
    assert_eq!(
        r.outbox.event.as_ref().unwrap().status,
        RemoteStatus::Completed
    );

    let again = s.requeue_dead_letter(&"a".into(), t(10_003)).await.unwrap();
    assert_eq!(again, RequeueOutcome::NotDeadLettered);
    assert_eq!(row(s, "a").await, r);

    let c = claim(s, LeaseKind::Notify, "n3", t(10_003), 10)
        .await
        .remove(0);
    assert_eq!(c.row.outbox.dispatch_version, 2);
    assert_eq!(c.row.outbox.dispatch_attempt, 0);
    assert_eq!(idempotency_key(c.row.id(), &c.row.outbox), "task:a:2:0");
    let out = notify(s, &c, NotifyAction::RunSucceeded, 10_004)
        .await
        .unwrap();
    assert_eq!(out.notify_status, NotifyStatus::Delivered);
}

/// Nothing but a dead letter is requeued: unknown ids, rows with nothing to deliver, rows in
/// flight (with their lease) are left exactly as they were.
pub async fn requeue_leaves_everything_else_untouched<S: Store>(s: &S) {
    let got = s.requeue_dead_letter(&"nope".into(), t(1)).await.unwrap();
    assert_eq!(got, RequeueOutcome::NotFound);
    s.insert_task(submitted("quiet", t(0))).await.unwrap();
    let before = row(s, "quiet").await;
    let got = s.requeue_dead_letter(&"quiet".into(), t(1)).await.unwrap();
    assert_eq!(got, RequeueOutcome::NotDeadLettered);
    assert_eq!(row(s, "quiet").await, before);

    let c = with_event(s, RemoteStatus::Completed).await;
    let before = row(s, "a").await;
    assert_eq!(before.outbox.lease.as_ref(), Some(&c.lease));
    let got = s.requeue_dead_letter(&"a".into(), t(2)).await.unwrap();
    assert_eq!(got, RequeueOutcome::NotDeadLettered);
    assert_eq!(row(s, "a").await, before);
}

/// A dead letter whose task has since stopped needing attention has nothing to deliver: the
/// requeue says so and changes nothing.
pub async fn requeue_of_a_dead_letter_with_nothing_to_say_changes_nothing<S: Store>(s: &S) {
    let c = with_event(s, RemoteStatus::InputRequired).await;
    notify(s, &c, NotifyAction::ThreadGone, 2).await.unwrap();
    poll_once(s, "a", 60, |r| report(r, RemoteStatus::Working, t(60)))
        .await
        .unwrap();
    let before = row(s, "a").await;
    assert_eq!(before.outbox.status, NotifyStatus::DeadLetter);
    assert_eq!(before.outbox.event, None);
    let got = s.requeue_dead_letter(&"a".into(), t(61)).await.unwrap();
    assert_eq!(got, RequeueOutcome::NothingToDeliver);
    assert_eq!(row(s, "a").await, before);
}
