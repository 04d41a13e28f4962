//! Cancel requests and cancel work: intent once, scoping, its own lease and budget (DOMAIN §6).

use super::support::*;
use crate::lease::{LeaseKind, Refusal};
use crate::status::{CancelStatus, NotifyStatus, RemoteStatus};
use crate::store::*;
use crate::transitions::cancel::CancelAction;
use crate::transitions::outbox::Recorded;

/// A cancel request records intent once; repeats change nothing, even with the cancel work leased.
pub async fn cancel_request_records_intent_once<S: Store>(s: &S) {
    s.insert_task(submitted("a", t(0))).await.unwrap();
    let c = claim(s, LeaseKind::Poll, "w", t(0), 10).await.remove(0);
    let target = CancelTarget::Id("a".into());
    assert_eq!(
        s.request_cancel(&alice(), &target, t(5)).await.unwrap(),
        CancelOutcome::Requested("a".into())
    );
    let r = row(s, "a").await;
    assert_eq!(r.cancel.requested_at, Some(t(5)));
    assert_eq!(r.cancel.status, CancelStatus::Requested);
    assert_eq!(r.cancel.due_at, Some(t(5)));
    assert_eq!(r.remote.updated_at, t(5));
    assert_eq!(
        r.poll.lease.as_ref(),
        Some(&c.lease),
        "the lease stays; the poll guard refuses its result"
    );
    assert_eq!(r.poll.lease.as_ref().unwrap().token, c.lease.token);
    // Repeats change nothing, even while the cancel work is leased.
    let cc = claim(s, LeaseKind::Cancel, "k", t(6), 10).await.remove(0);
    assert_eq!(
        s.request_cancel(&alice(), &target, t(7)).await.unwrap(),
        CancelOutcome::AlreadyRequested("a".into())
    );
    let r2 = row(s, "a").await;
    assert_eq!(r2.cancel.lease.as_ref(), Some(&cc.lease));
    assert_eq!(r2.cancel.requested_at, Some(t(5)));
    // A cancel-requested task is never polled again.
    assert!(claim(s, LeaseKind::Poll, "w", t(1000), 10).await.is_empty());
    // No poll lease at all: nothing to void.
    s.insert_task(submitted("b", t(0))).await.unwrap();
    s.request_cancel(&alice(), &CancelTarget::Id("b".into()), t(8))
        .await
        .unwrap();
    assert_eq!(row(s, "b").await.poll.lease, None);
}

/// Cancel requests see only the caller's tasks in the thread; names match active tasks only.
pub async fn cancel_request_scoping_and_names<S: Store>(s: &S) {
    s.insert_task(submitted_in("a1", "alice", "th1", "build", t(0)))
        .await
        .unwrap();
    s.insert_task(submitted_in("a2", "alice", "th1", "build", t(1)))
        .await
        .unwrap();
    s.insert_task(submitted_in("a3", "alice", "th1", "deploy", t(2)))
        .await
        .unwrap();
    s.insert_task(submitted_in("a4", "alice", "th2", "test", t(3)))
        .await
        .unwrap();
    s.insert_task(submitted_in("m1", "mallory", "th1", "test", t(4)))
        .await
        .unwrap();
    let mut done = submitted_in("a5", "alice", "th1", "deploy", t(5));
    done.remote.status = RemoteStatus::Failed;
    done.poll.next_poll_at = None;
    s.insert_task(done).await.unwrap();
    let ask = |target: CancelTarget| async move {
        s.request_cancel(&alice(), &target, t(10)).await.unwrap()
    };
    assert_eq!(
        ask(CancelTarget::Id("m1".into())).await,
        CancelOutcome::NotFound
    );
    assert_eq!(
        ask(CancelTarget::Id("a4".into())).await,
        CancelOutcome::NotFound
    );
    assert_eq!(
        ask(CancelTarget::Id("zz".into())).await,
        CancelOutcome::NotFound
    );
    assert_eq!(
        ask(CancelTarget::Name("test".into())).await,
        CancelOutcome::NotFound
    );
    assert_eq!(
        ask(CancelTarget::Name("build".into())).await,
        CancelOutcome::Ambiguous(2)
    );
    assert_eq!(
        ask(CancelTarget::Name("deploy".into())).await,
        CancelOutcome::Requested("a3".into()),
        "terminal namesakes do not count"
    );
    assert_eq!(
        ask(CancelTarget::Id("a5".into())).await,
        CancelOutcome::AlreadyFinished("a5".into())
    );
    assert_eq!(
        ask(CancelTarget::Name("deploy".into())).await,
        CancelOutcome::AlreadyRequested("a3".into())
    );
    assert_eq!(
        ask(CancelTarget::Name("nul\0name".into())).await,
        CancelOutcome::NotFound
    );
    assert_eq!(row(s, "m1").await.cancel.status, CancelStatus::None);
    assert_eq!(row(s, "a1").await.cancel.status, CancelStatus::None);
}

/// Cancel work is claimed by one worker; its terminal snapshot is applied and notified.
pub async fn cancel_claim_and_finish<S: Store>(s: &S) {
    s.insert_task(submitted("a", t(0))).await.unwrap();
    s.request_cancel(&alice(), &CancelTarget::Id("a".into()), t(1))
        .await
        .unwrap();
    assert!(claim(s, LeaseKind::Cancel, "k", t(0), 10).await.is_empty());
    let c = claim(s, LeaseKind::Cancel, "k", t(1), 10).await.remove(0);
    assert_eq!(c.lease.token.0, 1);
    assert!(
        claim(s, LeaseKind::Cancel, "k2", t(2), 10).await.is_empty(),
        "one remote cancel"
    );
    let update = report(&c.row, RemoteStatus::Cancelled, t(3));
    let out = s
        .finish_cancels(
            vec![CancelWrite {
                task_id: "a".into(),
                lease: c.lease.clone(),
                action: CancelAction::Finished(Box::new(update)),
            }],
            t(3),
        )
        .await
        .unwrap();
    let w = out[0].clone().unwrap();
    assert_eq!(w.recorded, Some(Recorded::NewVersion(1)));
    assert_eq!(w.notify_status, NotifyStatus::Pending);
    let r = row(s, "a").await;
    assert_eq!(r.remote.status, RemoteStatus::Cancelled);
    assert_eq!(r.cancel.status, CancelStatus::Done);
    assert_eq!(r.cancel.due_at, None);
    assert_eq!(r.cancel.lease, None);
    assert_eq!(r.poll.next_poll_at, None);
    assert!(claim(s, LeaseKind::Cancel, "k", t(1000), 10)
        .await
        .is_empty());
    assert_eq!(
        ids(&claim(s, LeaseKind::Notify, "n", t(3), 10).await),
        ["a"]
    );
}

/// A failed remote cancel counts and backs off; a spent budget is a visible cancel dead letter.
pub async fn cancel_failed_counts_and_budget_dead_letters<S: Store>(s: &S) {
    s.insert_task(submitted("a", t(0))).await.unwrap();
    s.request_cancel(&alice(), &CancelTarget::Id("a".into()), t(0))
        .await
        .unwrap();
    let c = claim(s, LeaseKind::Cancel, "k", t(0), 10).await.remove(0);
    let fail = |c: &Claimed, e: &str, now: i64| {
        let w = CancelWrite {
            task_id: "a".into(),
            lease: c.lease.clone(),
            action: CancelAction::Failed(e.into()),
        };
        async move { s.finish_cancels(vec![w], t(now)).await.unwrap().remove(0) }
    };
    let out = fail(&c, "remote 503", 1).await.unwrap();
    assert_eq!(out.recorded, None);
    let r = row(s, "a").await;
    assert_eq!(r.cancel.failures, 1);
    assert_eq!(r.cancel.last_error.as_deref(), Some("remote 503"));
    assert_eq!(r.cancel.due_at, Some(t(1).plus(policy().retry_delay(1))));
    assert_eq!(r.cancel.status, CancelStatus::Requested);
    let c = claim(s, LeaseKind::Cancel, "k", t(100), 10).await.remove(0);
    assert_eq!(c.lease.token.0, 2);
    let out = s
        .finish_cancels(
            vec![CancelWrite {
                task_id: "a".into(),
                lease: c.lease.clone(),
                action: CancelAction::BudgetExhausted,
            }],
            t(101),
        )
        .await
        .unwrap();
    assert!(out[0].is_ok());
    let r = row(s, "a").await;
    assert_eq!(r.cancel.status, CancelStatus::DeadLetter);
    assert_eq!(r.cancel.due_at, None);
    assert!(claim(s, LeaseKind::Cancel, "k", t(100_000), 10)
        .await
        .is_empty());
    assert_eq!(s.overview().await.unwrap().cancel_dead_letters, 1);
    // A stale cancel lease cannot write.
    assert_eq!(fail(&c, "late", 102).await, Err(Refusal::LeaseNotHeld));
}

/// A cancel that finds the task terminal ends the cancel work and changes nothing else.
pub async fn cancel_finished_on_terminal_task_keeps_state<S: Store>(s: &S) {
    // A task that finished remotely while its cancel was pending (reachable through insert).
    let mut done = submitted("a", t(0));
    done.remote.status = RemoteStatus::Completed;
    done.remote.result = Some("done first".into());
    done.poll.next_poll_at = None;
    done.cancel.requested_at = Some(t(1));
    done.cancel.status = CancelStatus::Requested;
    done.cancel.due_at = Some(t(1));
    s.insert_task(done.clone()).await.unwrap();
    let c = claim(s, LeaseKind::Cancel, "k", t(2), 10).await.remove(0);
    let cancelled = report(&c.row, RemoteStatus::Cancelled, t(3));
    let out = s
        .finish_cancels(
            vec![CancelWrite {
                task_id: "a".into(),
                lease: c.lease.clone(),
                action: CancelAction::Finished(Box::new(cancelled)),
            }],
            t(3),
        )
        .await
        .unwrap();
    let w = out[0].clone().unwrap();
    assert_eq!(w.recorded, None, "a terminal task never changes again");
    let r = row(s, "a").await;
    assert_eq!(r.remote, done.remote);
    assert_eq!(r.outbox, done.outbox);
    assert_eq!(r.cancel.status, CancelStatus::Done);
    assert_eq!(r.cancel.due_at, None);
    assert_eq!(r.cancel.lease, None);
}
