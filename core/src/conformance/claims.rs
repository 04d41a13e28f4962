//! Claims: order, limits, leases and fencing tokens (DOMAIN §4, §5).

use super::support::*;
use crate::lease::{LeaseKind, Refusal};
use crate::status::RemoteStatus;
use crate::store::*;

/// A claim takes due rows by (due, id), at most `limit`, each with a fresh lease.
pub async fn claim_orders_by_due_then_id_and_limits<S: Store>(s: &S) {
    // Due at t(0): "b", "c"; due at t(-5): "z"; due at t(-5) too: "y".
    for (id, at) in [("c", 0), ("b", 0), ("z", -5), ("y", -5), ("later", 100)] {
        s.insert_task(submitted(id, t(at))).await.unwrap();
    }
    assert!(claim(s, LeaseKind::Poll, "w1", t(1), 0).await.is_empty());
    let first = claim(s, LeaseKind::Poll, "w1", t(1), 3).await;
    assert_eq!(ids(&first), ["y", "z", "b"]);
    for c in &first {
        assert_eq!(c.lease.owner.as_str(), "w1");
        assert_eq!(c.lease.token.0, 1);
        assert_eq!(c.lease.expires_at, t(61));
        assert_eq!(c.row.poll.lease.as_ref(), Some(&c.lease));
        assert_eq!(c.row.poll.claims, 1);
    }
    let second = claim(s, LeaseKind::Poll, "w2", t(1), 10).await;
    assert_eq!(ids(&second), ["c"]);
    assert!(claim(s, LeaseKind::Poll, "w3", t(1), 10).await.is_empty());
}

/// A leased row is skipped until its lease expires; a re-claim gets a new fencing token and the old claim can no longer write.
pub async fn claim_skips_leased_rows_and_reclaims_expired_with_fresh_tokens<S: Store>(s: &S) {
    s.insert_task(submitted("a", t(0))).await.unwrap();
    let c1 = claim(s, LeaseKind::Poll, "w1", t(0), 10).await;
    assert_eq!(ids(&c1), ["a"]);
    assert!(claim(s, LeaseKind::Poll, "w1", t(59), 10).await.is_empty());
    // The lease is void at its expiry instant.
    let c2 = claim(s, LeaseKind::Poll, "w1", t(60), 10).await;
    assert_eq!(ids(&c2), ["a"]);
    assert_eq!(c2[0].lease.token.0, 2, "a fresh fencing token");
    assert_eq!(c2[0].lease.expires_at, t(120));
    // The first claim cannot write any more, even though the same worker holds the row.
    let stale = PollWrite {
        task_id: "a".into(),
        lease: c1[0].lease.clone(),
        completed_at: t(61),
        update: report(&c1[0].row, RemoteStatus::Working, t(61)),
    };
    let out = s.apply_polls(vec![stale], t(61)).await.unwrap();
    assert_eq!(out, vec![Err(Refusal::LeaseNotHeld)]);
    let fresh = PollWrite {
        task_id: "a".into(),
        lease: c2[0].lease.clone(),
        completed_at: t(61),
        update: report(&c2[0].row, RemoteStatus::Working, t(61)),
    };
    assert!(s.apply_polls(vec![fresh], t(61)).await.unwrap()[0].is_ok());
    let r = row(s, "a").await;
    assert_eq!(r.poll.lease, None);
    assert_eq!(r.poll.claims, 2);
    assert_eq!(r.remote.status, RemoteStatus::Working);
    assert_eq!(r.poll.next_poll_at, Some(t(91)));
}

/// Rows not yet due and terminal rows are not claimed by any loop.
pub async fn claim_skips_rows_not_due_and_non_pollable<S: Store>(s: &S) {
    s.insert_task(submitted("soon", t(10))).await.unwrap();
    let mut done = submitted("done", t(0));
    done.remote.status = RemoteStatus::Completed;
    done.poll.next_poll_at = None;
    s.insert_task(done).await.unwrap();
    assert!(claim(s, LeaseKind::Poll, "w", t(9), 10).await.is_empty());
    assert!(claim(s, LeaseKind::Cancel, "w", t(9), 10).await.is_empty());
    assert!(claim(s, LeaseKind::Notify, "w", t(9), 10).await.is_empty());
    assert_eq!(
        ids(&claim(s, LeaseKind::Poll, "w", t(10), 10).await),
        ["soon"]
    );
}
