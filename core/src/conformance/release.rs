//! Releases of each lease kind, and batches of writes (DOMAIN §5).

use super::support::*;
use crate::lease::{Lease, LeaseKind, Refusal};
use crate::status::{NotifyStatus, RemoteStatus};
use crate::store::*;
use crate::transitions::outbox::Recorded;

/// Releases of each lease kind: poll releases never count, notify and cancel releases count an error.
pub async fn releases_of_each_kind<S: Store>(s: &S) {
    s.insert_task(submitted("a", t(0))).await.unwrap();
    poll_releases(s).await;
    notify_releases(s).await;
    s.insert_task(submitted("b", t(0))).await.unwrap();
    cancel_releases(s).await;
}

/// A release of `id`'s `lease`, due again at `retry`.
fn release_of(id: &str, lease: &Lease, retry: i64, error: Option<&str>) -> Release {
    Release {
        task_id: id.into(),
        lease: lease.clone(),
        retry_at: t(retry),
        error: error.map(str::to_owned),
    }
}

/// Task "a": a poll release reschedules, never counts, and works once.
async fn poll_releases<S: Store>(s: &S) {
    let p = claim(s, LeaseKind::Poll, "w", t(0), 10).await.remove(0);
    let out = s
        .release(
            LeaseKind::Poll,
            vec![release_of("a", &p.lease, 50, Some("ignored"))],
            t(1),
        )
        .await
        .unwrap();
    assert!(out[0].is_ok());
    let r = row(s, "a").await;
    assert_eq!(
        (r.poll.lease.as_ref(), r.poll.next_poll_at),
        (None, Some(t(50)))
    );
    assert_eq!(r.poll.consecutive_errors, 0, "poll releases never count");
    assert_eq!(
        s.release(
            LeaseKind::Poll,
            vec![release_of("a", &p.lease, 50, None)],
            t(1)
        )
        .await
        .unwrap(),
        vec![Err(Refusal::LeaseNotHeld)]
    );
}

/// Task "a" (released by the poll loop, due at t(50)): notify releases with and without an
/// error, and one with an expired lease.
async fn notify_releases<S: Store>(s: &S) {
    poll_once(s, "a", 50, |r| report(r, RemoteStatus::Completed, t(50)))
        .await
        .unwrap();
    let n = claim(s, LeaseKind::Notify, "n", t(51), 10).await.remove(0);
    assert_eq!(
        s.release(
            LeaseKind::Notify,
            vec![release_of("a", &n.lease, 60, None)],
            t(52)
        )
        .await
        .unwrap()[0]
            .as_ref()
            .map(|w| w.notify_status),
        Ok(NotifyStatus::Claimed),
        "the phase is unchanged"
    );
    let r = row(s, "a").await;
    assert_eq!((r.outbox.failures, r.outbox.due_at), (0, t(60)));
    let n = claim(s, LeaseKind::Notify, "n", t(60), 10).await.remove(0);
    assert_eq!(
        s.release(
            LeaseKind::Notify,
            vec![release_of("a", &n.lease, 70, Some("oops"))],
            t(200)
        )
        .await
        .unwrap(),
        vec![Err(Refusal::LeaseExpired)]
    );
    s.release(
        LeaseKind::Notify,
        vec![release_of("a", &n.lease, 70, Some("oops"))],
        t(61),
    )
    .await
    .unwrap()[0]
        .clone()
        .unwrap();
    let r = row(s, "a").await;
    assert_eq!(
        (r.outbox.failures, r.outbox.last_error.as_deref()),
        (1, Some("oops"))
    );
}

/// Task "b": a cancel release with an error counts it; a lease of another kind releases nothing.
async fn cancel_releases<S: Store>(s: &S) {
    s.request_cancel(&alice(), &CancelTarget::Id("b".into()), t(1))
        .await
        .unwrap();
    let k = claim(s, LeaseKind::Cancel, "k", t(1), 10).await.remove(0);
    let out = s
        .release(
            LeaseKind::Cancel,
            vec![release_of("b", &k.lease, 30, Some("e"))],
            t(2),
        )
        .await
        .unwrap();
    assert!(out[0].is_ok());
    let r = row(s, "b").await;
    assert_eq!(
        (r.cancel.lease.as_ref(), r.cancel.due_at, r.cancel.failures),
        (None, Some(t(30)), 1)
    );
    // A lease of another kind does not release this one.
    let other_kind = release_of("b", &k.lease, 1, None);
    assert_eq!(
        s.release(LeaseKind::Notify, vec![other_kind], t(3))
            .await
            .unwrap(),
        vec![Err(Refusal::LeaseNotHeld)]
    );
}

/// A batch answers one outcome per write, in order, also when a task repeats.
pub async fn batch_outcomes_in_order_with_repeated_tasks<S: Store>(s: &S) {
    for id in ["a", "b"] {
        s.insert_task(submitted(id, t(0))).await.unwrap();
    }
    let c = claim(s, LeaseKind::Poll, "w", t(0), 10).await;
    let (a, b) = (&c[0], &c[1]);
    let w = |c: &Claimed, lease: Lease| PollWrite {
        task_id: c.row.id().clone(),
        lease,
        completed_at: t(1),
        update: report(&c.row, RemoteStatus::InputRequired, t(1)),
    };
    let out = s
        .apply_polls(
            vec![
                w(b, with_token(&b.lease, 5)),
                w(a, a.lease.clone()),
                w(b, b.lease.clone()),
                w(a, a.lease.clone()),
                w(b, b.lease.clone()),
            ],
            t(1),
        )
        .await
        .unwrap();
    let shape: Vec<Result<Option<Recorded>, Refusal>> =
        out.iter().map(|o| o.clone().map(|w| w.recorded)).collect();
    assert_eq!(
        shape,
        vec![
            Err(Refusal::LeaseNotHeld),
            Ok(Some(Recorded::NewVersion(1))),
            Ok(Some(Recorded::NewVersion(1))),
            Err(Refusal::LeaseNotHeld),
            Err(Refusal::LeaseNotHeld),
        ]
    );
    assert!(s.apply_polls(vec![], t(1)).await.unwrap().is_empty());
    assert!(s
        .release(LeaseKind::Cancel, vec![], t(1))
        .await
        .unwrap()
        .is_empty());
}
