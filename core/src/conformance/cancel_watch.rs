//! A cancel never leaves its task unwatched (DOMAIN §6, issue 11 item 1): after a cancel the
//! server only acknowledged, or whose budget is spent, the task is polled again until it is
//! terminal and its end is notified; a poll claimed before the cancel work ended stays fenced.

use super::support::*;
use crate::lease::{Lease, LeaseKind, Refusal};
use crate::status::{CancelStatus, NotifyStatus, RemoteStatus};
use crate::store::*;
use crate::task::TaskRow;
use crate::transitions::cancel::CancelAction;
use crate::transitions::outbox::Recorded;

/// Requests a cancel of `id` at `at` and claims its cancel work.
async fn requested_and_claimed<S: Store>(s: &S, id: &str, at: i64) -> Claimed {
    let target = CancelTarget::Id(id.into());
    assert_eq!(
        s.request_cancel(&alice(), &target, t(at)).await.unwrap(),
        CancelOutcome::Requested(id.into())
    );
    let c = claim(s, LeaseKind::Cancel, "k", t(at), 10).await;
    c.into_iter()
        .find(|c| c.row.id().as_str() == id)
        .expect("cancel work claimed")
}

/// Applies one cancel step under claim `c` at `now`; the write's outcome.
async fn cancel_step<S: Store>(s: &S, c: &Claimed, action: CancelAction, now: i64) -> WriteOutcome {
    let w = CancelWrite {
        task_id: c.row.id().clone(),
        lease: c.lease.clone(),
        action,
    };
    s.finish_cancels(vec![w], t(now)).await.unwrap().remove(0)
}

/// A poll write of `status` for `row` under `lease`, completed at `at`.
fn poll_write(row: &TaskRow, lease: &Lease, status: RemoteStatus, at: i64) -> PollWrite {
    PollWrite {
        task_id: row.id().clone(),
        lease: lease.clone(),
        completed_at: t(at),
        update: report(row, status, t(at)),
    }
}

/// A cancel acknowledged with a non-terminal report is done, not failed; the report applies, the
/// task is polled again, and its terminal state is notified once.
pub async fn cancel_acknowledged_is_polled_until_terminal<S: Store>(s: &S) {
    s.insert_task(submitted("a", t(0))).await.unwrap();
    poll_once(s, "a", 0, |r| report(r, RemoteStatus::Working, t(0)))
        .await
        .unwrap();
    let c = requested_and_claimed(s, "a", 1).await;
    assert!(
        claim(s, LeaseKind::Poll, "w", t(100_000), 10)
            .await
            .is_empty(),
        "no poll while the cancel work is in progress"
    );
    let ack = report(&c.row, RemoteStatus::Working, t(2));
    let ack_next = ack.next_poll_at;
    cancel_step(s, &c, CancelAction::Acknowledged(Box::new(ack)), 2)
        .await
        .unwrap();
    let r = row(s, "a").await;
    assert_eq!(
        r.cancel.status,
        CancelStatus::Done,
        "an acknowledgement is no failure"
    );
    assert_eq!(r.cancel.failures, 0);
    assert_eq!(r.cancel.due_at, None);
    assert_eq!(r.cancel.lease, None);
    assert_eq!(r.remote.status, RemoteStatus::Working);
    assert_eq!(r.remote.observed_at, Some(t(2)));
    assert_eq!(r.poll.next_poll_at, ack_next);
    assert!(claim(s, LeaseKind::Cancel, "k", t(100_000), 10)
        .await
        .is_empty());
    // Polled again when due; the end the server reports later is applied and notified.
    let due = ack_next.expect("a working task has a next poll");
    let p = claim(s, LeaseKind::Poll, "w", due, 10).await;
    assert_eq!(ids(&p), ["a"]);
    let end = s
        .apply_polls(
            vec![poll_write(
                &p[0].row,
                &p[0].lease,
                RemoteStatus::Cancelled,
                40,
            )],
            t(40),
        )
        .await
        .unwrap()
        .remove(0)
        .unwrap();
    assert_eq!(end.recorded, Some(Recorded::NewVersion(1)));
    assert_eq!(end.notify_status, NotifyStatus::Pending);
    let r = row(s, "a").await;
    assert_eq!(r.remote.status, RemoteStatus::Cancelled);
    assert_eq!(r.poll.next_poll_at, None);
    assert!(claim(s, LeaseKind::Poll, "w", t(100_000), 10)
        .await
        .is_empty());
    assert_eq!(
        ids(&claim(s, LeaseKind::Notify, "n", t(40), 10).await),
        ["a"]
    );
}

/// A spent cancel budget is a visible cancel dead letter that keeps the task watched: it is
/// polled again and the end it reaches (here: completed, as after a legacy server's "already
/// terminal" answer) is notified.
pub async fn cancel_dead_letter_is_polled_until_end_delivered<S: Store>(s: &S) {
    s.insert_task(submitted("a", t(0))).await.unwrap();
    let c = requested_and_claimed(s, "a", 0).await;
    cancel_step(s, &c, CancelAction::Failed("already terminal".into()), 1)
        .await
        .unwrap();
    assert!(claim(s, LeaseKind::Poll, "w", t(100_000), 10)
        .await
        .is_empty());
    let c = claim(s, LeaseKind::Cancel, "k", t(100), 10).await.remove(0);
    cancel_step(s, &c, CancelAction::BudgetExhausted, 101)
        .await
        .unwrap();
    let r = row(s, "a").await;
    assert_eq!(r.cancel.status, CancelStatus::DeadLetter);
    assert_eq!(r.cancel.failures, 1);
    assert_eq!(r.cancel.last_error.as_deref(), Some("already terminal"));
    assert_eq!(r.cancel.due_at, None);
    assert_eq!(s.overview().await.unwrap().cancel_dead_letters, 1);
    assert!(claim(s, LeaseKind::Cancel, "k", t(100_000), 10)
        .await
        .is_empty());
    // The poll that was due all along is claimed now; the task's end is applied and notified.
    let p = claim(s, LeaseKind::Poll, "w", t(102), 10).await;
    assert_eq!(
        ids(&p),
        ["a"],
        "a dead-lettered cancel leaves the task watched"
    );
    let end = s
        .apply_polls(
            vec![poll_write(
                &p[0].row,
                &p[0].lease,
                RemoteStatus::Completed,
                103,
            )],
            t(103),
        )
        .await
        .unwrap()
        .remove(0)
        .unwrap();
    assert_eq!(end.recorded, Some(Recorded::NewVersion(1)));
    let r = row(s, "a").await;
    assert_eq!(r.remote.status, RemoteStatus::Completed);
    assert_eq!(
        r.cancel.status,
        CancelStatus::DeadLetter,
        "the dead letter stays visible"
    );
    assert_eq!(
        ids(&claim(s, LeaseKind::Notify, "n", t(103), 10).await),
        ["a"]
    );
    // A repeat changes nothing: the cancel work is not restarted.
    assert_eq!(
        s.request_cancel(&alice(), &CancelTarget::Id("a".into()), t(104))
            .await
            .unwrap(),
        CancelOutcome::AlreadyFinished("a".into())
    );
}

/// A poll claimed before the cancel work ended (acknowledged or dead-lettered) never applies its
/// result, nor its release, even with its lease unexpired; the next poll is due no earlier than
/// that lease's expiry (its holder may still be calling the server); a poll claimed afterwards
/// applies.
pub async fn cancel_ended_refuses_stale_poll<S: Store>(s: &S) {
    for id in ["ack", "dead"] {
        s.insert_task(submitted(id, t(0))).await.unwrap();
    }
    let stale = claim(s, LeaseKind::Poll, "w1", t(0), 10).await;
    assert_eq!(ids(&stale), ["ack", "dead"]);
    let ack = requested_and_claimed(s, "ack", 1).await;
    let dead = requested_and_claimed(s, "dead", 1).await;
    let update = report(&ack.row, RemoteStatus::Working, t(2));
    cancel_step(s, &ack, CancelAction::Acknowledged(Box::new(update)), 2)
        .await
        .unwrap();
    cancel_step(s, &dead, CancelAction::BudgetExhausted, 2)
        .await
        .unwrap();
    for id in ["ack", "dead"] {
        assert_eq!(
            row(s, id).await.poll.lease,
            None,
            "{id}: ending the cancel voids the poll lease"
        );
    }
    // The stale polls completed before and after the cancel ended, all within their lease.
    let writes = vec![
        poll_write(&stale[0].row, &stale[0].lease, RemoteStatus::Completed, 1),
        poll_write(&stale[0].row, &stale[0].lease, RemoteStatus::Completed, 3),
        poll_write(&stale[1].row, &stale[1].lease, RemoteStatus::Completed, 3),
    ];
    let out = s.apply_polls(writes, t(3)).await.unwrap();
    let refusals: Vec<_> = out.iter().map(|o| o.as_ref().err().copied()).collect();
    assert_eq!(refusals, vec![Some(Refusal::LeaseNotHeld); 3]);
    let releases = stale
        .iter()
        .map(|c| Release {
            task_id: c.row.id().clone(),
            lease: c.lease.clone(),
            retry_at: t(9_999),
            error: None,
        })
        .collect();
    let out = s.release(LeaseKind::Poll, releases, t(3)).await.unwrap();
    assert!(out.iter().all(|o| o == &Err(Refusal::LeaseNotHeld)));
    for id in ["ack", "dead"] {
        let r = row(s, id).await;
        assert!(
            !r.remote.status.is_terminal(),
            "{id}: nothing stale applied"
        );
        assert_ne!(
            r.poll.next_poll_at,
            Some(t(9_999)),
            "{id}: no stale release"
        );
    }
    // While the voided lease could still be calling the server, no new poll is claimed: both
    // are due at its expiry, t(60).
    let early = claim(s, LeaseKind::Poll, "w2", t(59), 10).await;
    assert!(
        early.is_empty(),
        "a second poll would overlap the stale one"
    );
    for id in ["ack", "dead"] {
        assert_eq!(row(s, id).await.poll.next_poll_at, Some(t(60)), "{id}");
    }
    // A poll claimed after the cancel ended applies.
    let fresh = claim(s, LeaseKind::Poll, "w2", t(100), 10).await;
    assert_eq!(ids(&fresh), ["ack", "dead"]);
    assert!(fresh.iter().all(|c| c.lease.token.0 == 2));
    let writes = fresh
        .iter()
        .map(|c| poll_write(&c.row, &c.lease, RemoteStatus::Cancelled, 101))
        .collect();
    let out = s.apply_polls(writes, t(101)).await.unwrap();
    assert!(out.iter().all(|o| o.is_ok()));
}
