//! Cancel work that meets an unavailable server (DOMAIN §6): waited out, never counted; only an
//! outage of `max_unavailable` dead-letters it; an operator's requeue re-issues a cancel dead
//! letter.

use super::support::*;
use crate::lease::LeaseKind;
use crate::status::{CancelStatus, DeadLetterReason, RemoteStatus};
use crate::store::*;
use crate::transitions::cancel::{dead_letter_reason, CancelAction};

async fn cancel_step<S: Store>(s: &S, action: CancelAction, now: i64) {
    let c = claim(s, LeaseKind::Cancel, "k", t(now), 10).await.remove(0);
    let w = CancelWrite {
        task_id: "a".into(),
        lease: c.lease,
        action,
    };
    let out = s.finish_cancels(vec![w], t(now)).await.unwrap().remove(0);
    assert!(out.is_ok(), "{out:?}");
}

async fn requested<S: Store>(s: &S, at: i64) {
    s.insert_task(submitted("a", t(0))).await.unwrap();
    s.request_cancel(&alice(), &CancelTarget::Id("a".into()), t(at))
        .await
        .unwrap();
}

/// Unanswered cancels count no failure: the episode's start is kept, the backoff grows (capped);
/// an answer (even a refusal) ends the episode; an episode of `max_unavailable` dead-letters the
/// cancel with the reason `unavailable`, and polling resumes.
pub async fn cancel_unavailable_waits_uncounted<S: Store>(s: &S) {
    requested(s, 0).await;
    let down = || CancelAction::Unavailable("remote unavailable (connect): refused".into());
    cancel_step(s, down(), 1).await;
    let r = row(s, "a").await;
    assert_eq!((r.cancel.failures, r.cancel.outages), (0, 1));
    assert_eq!(r.cancel.unavailable_since, Some(t(1)));
    assert_eq!(r.cancel.status, CancelStatus::Requested);
    assert_eq!(
        r.cancel.due_at,
        Some(t(1).plus(policy().unavailable_delay(1)))
    );
    assert!(r
        .cancel
        .last_error
        .as_deref()
        .is_some_and(|e| e.contains("refused")));
    cancel_step(s, down(), 30).await;
    let r = row(s, "a").await;
    assert_eq!((r.cancel.failures, r.cancel.outages), (0, 2));
    assert_eq!(
        r.cancel.unavailable_since,
        Some(t(1)),
        "the episode's start is kept"
    );
    assert_eq!(
        r.cancel.due_at,
        Some(t(30).plus(policy().unavailable_delay(2)))
    );
    cancel_step(s, CancelAction::Failed("already terminal".into()), 60).await;
    let r = row(s, "a").await;
    assert_eq!((r.cancel.failures, r.cancel.outages), (1, 0));
    assert_eq!(
        r.cancel.unavailable_since, None,
        "an answer ends the episode"
    );
    cancel_step(s, down(), 200).await;
    let late = 200 + policy().max_unavailable.as_secs() as i64;
    cancel_step(s, down(), late - 100).await;
    assert_eq!(row(s, "a").await.cancel.status, CancelStatus::Requested);
    cancel_step(s, down(), late).await;
    let r = row(s, "a").await;
    assert_eq!(r.cancel.status, CancelStatus::DeadLetter);
    assert_eq!((r.cancel.due_at, r.cancel.failures), (None, 1));
    assert_eq!(r.cancel.unavailable_since, Some(t(200)));
    assert_eq!(dead_letter_reason(&r), Some(DeadLetterReason::Unavailable));
    assert_eq!(s.overview().await.unwrap().cancel_dead_letters, 1);
    assert_eq!(
        ids(&claim(s, LeaseKind::Poll, "p", t(late + 10_000), 10).await),
        ["a"],
        "polling resumes after the cancel dead letter"
    );
}

/// A requeued cancel dead letter is requested again, due now, with a fresh budget and no
/// outage; only a dead-lettered cancel of a task that is not terminal is requeued.
pub async fn cancel_requeue_reissues_a_dead_letter<S: Store>(s: &S) {
    let id = || crate::ids::TaskId::from("a");
    assert_eq!(
        s.requeue_cancel_dead_letter(&id(), t(1)).await.unwrap(),
        CancelRequeueOutcome::NotFound
    );
    requested(s, 0).await;
    assert_eq!(
        s.requeue_cancel_dead_letter(&id(), t(1)).await.unwrap(),
        CancelRequeueOutcome::NotDeadLettered,
        "pending cancel work is not a dead letter"
    );
    cancel_step(s, CancelAction::Failed("refused".into()), 1).await;
    cancel_step(s, CancelAction::BudgetExhausted, 100).await;
    let dead = row(s, "a").await;
    assert_eq!(dead_letter_reason(&dead), Some(DeadLetterReason::Budget));
    let polled = claim(s, LeaseKind::Poll, "p", t(10_000), 10)
        .await
        .remove(0);
    assert_eq!(
        s.requeue_cancel_dead_letter(&id(), t(10_001))
            .await
            .unwrap(),
        CancelRequeueOutcome::Requeued
    );
    let r = row(s, "a").await;
    assert_eq!(r.cancel.status, CancelStatus::Requested);
    assert_eq!(r.cancel.due_at, Some(t(10_001)));
    assert_eq!((r.cancel.failures, r.cancel.outages), (0, 0));
    assert_eq!(
        (r.cancel.last_error.as_deref(), r.cancel.unavailable_since),
        (None, None)
    );
    assert_eq!(r.cancel.requested_at, dead.cancel.requested_at);
    assert_eq!(
        r.poll.lease.as_ref(),
        Some(&polled.lease),
        "the poll guard refuses it"
    );
    assert_eq!(dead_letter_reason(&r), None);
    assert_eq!(
        ids(&claim(s, LeaseKind::Cancel, "k", t(10_001), 10).await),
        ["a"],
        "the cancel is re-issued"
    );
    assert_eq!(
        s.requeue_cancel_dead_letter(&id(), t(10_002))
            .await
            .unwrap(),
        CancelRequeueOutcome::NotDeadLettered
    );
    let mut finished = submitted("b", t(0));
    finished.remote.status = RemoteStatus::Completed;
    finished.poll.next_poll_at = None;
    finished.cancel.requested_at = Some(t(1));
    finished.cancel.status = CancelStatus::DeadLetter;
    s.insert_task(finished.clone()).await.unwrap();
    assert_eq!(
        s.requeue_cancel_dead_letter(&"b".into(), t(2))
            .await
            .unwrap(),
        CancelRequeueOutcome::AlreadyFinished
    );
    assert_eq!(row(s, "b").await.cancel, finished.cancel, "nothing changed");
}
