//! Poll writes: the guard, new versions, unchanged fingerprints, attention cleared (DOMAIN §2, §4).

use super::support::*;
use crate::lease::{Lease, LeaseKind, Refusal};
use crate::status::{NotifyStatus, RemoteStatus};
use crate::store::*;
use crate::task::TaskRow;
use crate::transitions::outbox::Recorded;

/// A poll write is refused for a missing task, a foreign or stale lease, an expired lease, a cancel request and a terminal task, in that order, and changes nothing.
pub async fn poll_guard_refusals_in_order<S: Store>(s: &S) {
    for id in ["a", "b", "c"] {
        s.insert_task(submitted(id, t(0))).await.unwrap();
    }
    // A terminal row that still carries a poll lease (only reachable through insert).
    let mut term = submitted("term", t(0));
    term.remote.status = RemoteStatus::Completed;
    term.poll.next_poll_at = None;
    term.poll.lease = Some(Lease {
        owner: "w1".into(),
        token: crate::lease::LeaseToken(1),
        expires_at: t(60),
    });
    term.poll.claims = 1;
    s.insert_task(term.clone()).await.unwrap();
    let c = claim(s, LeaseKind::Poll, "w1", t(0), 10).await;
    assert_eq!(ids(&c), ["a", "b", "c"]);
    let (a, b, cc) = (&c[0], &c[1], &c[2]);
    assert_eq!(
        s.request_cancel(&alice(), &CancelTarget::Id("c".into()), t(5))
            .await
            .unwrap(),
        CancelOutcome::Requested("c".into())
    );
    let w = |id: &str, lease: &Lease, at: i64, row: &TaskRow| PollWrite {
        task_id: id.into(),
        lease: lease.clone(),
        completed_at: t(at),
        update: report(row, RemoteStatus::Working, t(at)),
    };
    let foreign = Lease {
        owner: "w2".into(),
        ..a.lease.clone()
    };
    let out = s
        .apply_polls(
            vec![
                w("nope", &a.lease, 1, &a.row),
                w("a", &with_token(&a.lease, 7), 1, &a.row),
                w("a", &foreign, 1, &a.row),
                w("b", &b.lease, 60, &b.row),
                // A cancel was requested for c at t(5): every poll result is refused,
                // whenever the poll completed.
                w("c", &cc.lease, 4, &cc.row),
                w("c", &cc.lease, 5, &cc.row),
                w("term", term.poll.lease.as_ref().unwrap(), 1, &term),
            ],
            t(70),
        )
        .await
        .unwrap();
    assert_eq!(
        out,
        vec![
            Err(Refusal::NoSuchTask),
            Err(Refusal::LeaseNotHeld),
            Err(Refusal::LeaseNotHeld),
            Err(Refusal::LeaseExpired),
            Err(Refusal::CancelRequested),
            Err(Refusal::CancelRequested),
            Err(Refusal::Terminal),
        ]
    );
    // Nothing changed.
    assert_eq!(row(s, "b").await.poll.lease.as_ref(), Some(&b.lease));
    assert_eq!(row(s, "term").await, term);
}

/// An accepted poll write applies the remote state, records version 1 and opens the channel.
pub async fn poll_write_records_new_version_and_opens_channel<S: Store>(s: &S) {
    s.insert_task(submitted("a", t(0))).await.unwrap();
    let c = claim(s, LeaseKind::Poll, "w", t(0), 10).await.remove(0);
    let update = report(&c.row, RemoteStatus::Completed, t(2));
    let fp = update.event.as_ref().unwrap().1.clone();
    let out = s
        .apply_polls(
            vec![PollWrite {
                task_id: "a".into(),
                lease: c.lease.clone(),
                completed_at: t(2),
                update,
            }],
            t(3),
        )
        .await
        .unwrap();
    assert_eq!(
        out,
        vec![Ok(Written {
            recorded: Some(Recorded::NewVersion(1)),
            event_version: 1,
            notified_version: 0,
            notify_status: NotifyStatus::Pending,
            fingerprint: Some(fp),
        })]
    );
    let r = row(s, "a").await;
    assert_eq!(r.remote.status, RemoteStatus::Completed);
    assert_eq!(r.remote.result.as_deref(), Some("42"));
    assert_eq!(r.remote.updated_at, t(2));
    assert_eq!(r.remote.observed_at, Some(t(2)));
    assert_eq!(r.poll.next_poll_at, None);
    assert_eq!(r.outbox.due_at, t(3));
    assert_eq!(
        r.outbox.event.as_ref().unwrap().status,
        RemoteStatus::Completed
    );
    assert!(claim(s, LeaseKind::Poll, "w", t(1000), 10).await.is_empty());
}

/// A re-poll of an unchanged state records nothing and does not reschedule the notification.
pub async fn repoll_of_unchanged_state_records_nothing<S: Store>(s: &S) {
    s.insert_task(submitted("a", t(0))).await.unwrap();
    let first = poll_once(s, "a", 0, |r| report(r, RemoteStatus::InputRequired, t(0)))
        .await
        .unwrap();
    assert_eq!(first.recorded, Some(Recorded::NewVersion(1)));
    let again = poll_once(s, "a", 60, |r| {
        report(r, RemoteStatus::InputRequired, t(60))
    })
    .await
    .unwrap();
    assert_eq!(again.recorded, Some(Recorded::Unchanged));
    assert_eq!(again.event_version, 1);
    let r = row(s, "a").await;
    assert_eq!(
        r.outbox.due_at,
        t(0),
        "an unchanged fingerprint does not reschedule"
    );
    assert_eq!(r.remote.updated_at, t(0));
    assert_eq!(r.remote.observed_at, Some(t(60)));
}

/// Degraded tracking makes a version; a different error text does not; recovery drops the undelivered version.
pub async fn attention_cleared_drops_undelivered_version<S: Store>(s: &S) {
    s.insert_task(submitted("a", t(0))).await.unwrap();
    // Three failed polls degrade tracking: a version with a degraded event.
    let mut now = 0;
    for n in 1..=3 {
        let out = poll_once(s, "a", now, |r| failure(r, &format!("timeout {n}"), t(now)))
            .await
            .unwrap();
        if n < 3 {
            assert_eq!(out.recorded, Some(Recorded::Cleared));
            assert_eq!(out.notify_status, NotifyStatus::None);
        } else {
            assert_eq!(out.recorded, Some(Recorded::NewVersion(1)));
        }
        now = row(s, "a").await.poll.next_poll_at.unwrap().as_micros() / 1_000_000 - 1_700_000_000;
    }
    // A fourth failure with another text: no churn.
    let out = poll_once(s, "a", now, |r| failure(r, "different text", t(now)))
        .await
        .unwrap();
    assert_eq!(out.recorded, Some(Recorded::Unchanged));
    now = row(s, "a").await.poll.next_poll_at.unwrap().as_micros() / 1_000_000 - 1_700_000_000;
    // Recovery to plain working clears attention: the undelivered version is dropped.
    let out = poll_once(s, "a", now, |r| report(r, RemoteStatus::Working, t(now)))
        .await
        .unwrap();
    assert_eq!(
        out,
        Written {
            recorded: Some(Recorded::Cleared),
            event_version: 1,
            notified_version: 1,
            notify_status: NotifyStatus::None,
            fingerprint: None,
        }
    );
    let r = row(s, "a").await;
    assert_eq!(r.outbox.event, None);
    assert_eq!(r.poll.consecutive_errors, 0);
    assert!(claim(s, LeaseKind::Notify, "n", t(now + 1000), 10)
        .await
        .is_empty());
}
