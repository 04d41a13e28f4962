//! A poll write that opens the notification channel claims the notification in the same write
//! ([`Store::apply_polls_and_claim`], DOMAIN §3): exactly the claim the notification loop would
//! have made, and only when nothing is in flight.

use super::support::*;
use crate::lease::{Lease, LeaseKind, LeaseToken, Refusal};
use crate::status::{NotifyStatus, RemoteStatus};
use crate::store::*;
use crate::transitions::outbox::Recorded;
use std::time::Duration;

fn hand_off(worker: &str, now: i64) -> HandOff {
    HandOff {
        worker: worker.into(),
        now: t(now),
        lease_for: Duration::from_secs(30),
    }
}

/// A new version with nothing in flight is claimed for the hand-off's worker: fresh lease,
/// snapshot frozen, `claimed`; a write without a new version or a refused one claims nothing.
pub async fn poll_write_claims_the_notification_it_opens<S: Store>(s: &S) {
    for id in ["a", "b", "c"] {
        s.insert_task(submitted(id, t(0))).await.unwrap();
    }
    let c = claim(s, LeaseKind::Poll, "w", t(0), 10).await;
    assert_eq!(ids(&c), ["a", "b", "c"]);
    let write = |i: usize, status: RemoteStatus, lease: Lease| PollWrite {
        task_id: c[i].row.id().clone(),
        lease,
        completed_at: t(2),
        update: report(&c[i].row, status, t(2)),
    };
    let foreign = Lease {
        owner: "w2".into(),
        ..c[2].lease.clone()
    };
    let (out, claimed) = s
        .apply_polls_and_claim(
            vec![
                write(0, RemoteStatus::Completed, c[0].lease.clone()),
                write(1, RemoteStatus::Working, c[1].lease.clone()),
                write(2, RemoteStatus::Completed, foreign),
            ],
            t(3),
            hand_off("n1", 3),
        )
        .await
        .unwrap();
    let a = out[0].as_ref().expect("a written");
    assert_eq!(a.recorded, Some(Recorded::NewVersion(1)));
    assert_eq!((a.event_version, a.notified_version), (1, 0));
    assert_eq!(a.notify_status, NotifyStatus::Claimed);
    assert_eq!(
        out[1].as_ref().map(|w| w.notify_status),
        Ok(NotifyStatus::None)
    );
    assert_eq!(out[2], Err(Refusal::LeaseNotHeld));
    assert_eq!(ids(&claimed), ["a"]);
    let lease = Lease {
        owner: "n1".into(),
        token: LeaseToken(1),
        expires_at: t(33),
    };
    assert_eq!(claimed[0].lease, lease);
    let r = row(s, "a").await;
    assert_eq!(claimed[0].row, r, "the claim returns the row as stored");
    assert_eq!(r.poll.lease, None, "the poll lease is released");
    assert_eq!(r.remote.status, RemoteStatus::Completed);
    let o = &r.outbox;
    assert_eq!(o.lease.as_ref(), Some(&lease));
    assert_eq!((o.status, o.claims), (NotifyStatus::Claimed, 1));
    assert_eq!((o.dispatch_version, o.dispatch_attempt), (1, 0));
    assert_eq!(o.dispatch_event, o.event);
    assert!(o.dispatch_event.is_some());
    assert!(
        claim(s, LeaseKind::Notify, "n2", t(4), 10).await.is_empty(),
        "the notification is held by the hand-off's lease"
    );
    let reclaimed = claim(s, LeaseKind::Notify, "n2", t(33), 10).await;
    assert_eq!(
        ids(&reclaimed),
        ["a"],
        "an expired hand-off lease is claimed again"
    );
    assert_eq!(reclaimed[0].lease.token, LeaseToken(2));
}

/// A new version while a dispatch is in flight is only recorded: no hand-off, the notification
/// lease and the frozen snapshot stay.
pub async fn no_hand_off_while_a_dispatch_is_in_flight<S: Store>(s: &S) {
    let held = with_event(s, RemoteStatus::InputRequired).await;
    let c = claim(s, LeaseKind::Poll, "w", t(60), 10).await.remove(0);
    let (out, claimed) = s
        .apply_polls_and_claim(
            vec![PollWrite {
                task_id: "a".into(),
                lease: c.lease.clone(),
                completed_at: t(60),
                update: report(&c.row, RemoteStatus::Completed, t(60)),
            }],
            t(60),
            hand_off("w", 60),
        )
        .await
        .unwrap();
    assert!(claimed.is_empty());
    let w = out[0].as_ref().expect("written");
    assert_eq!(w.recorded, Some(Recorded::NewVersion(2)));
    assert_eq!(w.notify_status, NotifyStatus::Claimed);
    let r = row(s, "a").await;
    assert_eq!(r.outbox.lease.as_ref(), Some(&held.lease));
    assert_eq!(r.outbox.dispatch_version, 1);
}
