//! The notification outbox through the store: every step of a dispatch (DOMAIN §3).

use super::support::*;
use crate::ids::RunId;
use crate::lease::{Lease, LeaseKind, Refusal};
use crate::policy::{FAILURE_BUDGET, MAX_STORED_ERROR};
use crate::status::{DeadLetterReason, NotifyStatus, RemoteStatus};
use crate::store::*;
use crate::transitions::outbox::{NotifyAction, Recorded};

/// A new version while a dispatch is in flight is only recorded: the frozen snapshot and the lease stay.
pub async fn new_version_while_in_flight_does_not_overwrite_snapshot<S: Store>(s: &S) {
    let c = with_event(s, RemoteStatus::InputRequired).await;
    assert_eq!(c.row.outbox.status, NotifyStatus::Claimed);
    assert_eq!(c.row.outbox.dispatch_version, 1);
    let frozen = c.row.outbox.dispatch_event.clone().unwrap();
    assert_eq!(frozen.status, RemoteStatus::InputRequired);
    // The poll loop records version 2 meanwhile (input_required is polled again after 60 s).
    let out = poll_once(s, "a", 60, |r| report(r, RemoteStatus::Completed, t(60)))
        .await
        .unwrap();
    assert_eq!(out.recorded, Some(Recorded::NewVersion(2)));
    assert_eq!(out.notify_status, NotifyStatus::Claimed);
    let r = row(s, "a").await;
    assert_eq!(r.outbox.dispatch_version, 1);
    assert_eq!(r.outbox.dispatch_event.as_ref(), Some(&frozen));
    assert_eq!(
        r.outbox.lease.as_ref(),
        Some(&c.lease),
        "the notify lease is kept"
    );
    assert_eq!(
        r.outbox.event.as_ref().unwrap().status,
        RemoteStatus::Completed
    );
}

/// A notification claim freezes the snapshot; a dispatched row is re-claimed with its run.
pub async fn notify_claim_freezes_snapshot_and_keeps_dispatched_run<S: Store>(s: &S) {
    let c = with_event(s, RemoteStatus::Completed).await;
    assert_eq!(c.lease.token.0, 1);
    assert_eq!(c.row.outbox.claims, 1);
    assert_eq!(c.row.outbox.dispatch_event, c.row.outbox.event);
    let out = notify(s, &c, NotifyAction::Launched(RunId::from("run-1")), 2)
        .await
        .unwrap();
    assert_eq!(out.notify_status, NotifyStatus::Dispatched);
    // Due again after the run check interval, with the run kept.
    assert!(claim(s, LeaseKind::Notify, "n1", t(11), 10)
        .await
        .is_empty());
    let again = claim(s, LeaseKind::Notify, "n2", t(12), 10).await.remove(0);
    assert_eq!(again.lease.token.0, 2);
    assert_eq!(again.row.outbox.status, NotifyStatus::Dispatched);
    assert_eq!(again.row.outbox.run_id, Some(RunId::from("run-1")));
    assert_eq!(again.row.outbox.dispatch_event, c.row.outbox.dispatch_event);
    // The run's age is counted from the write of its launch (max_run_life bounds it).
    assert_eq!(c.row.outbox.launched_at, None);
    assert_eq!(again.row.outbox.launched_at, Some(t(2)));
}

/// Launched, still running, then succeeded: the version is delivered and the row rests.
pub async fn notify_launched_then_pending_then_succeeded<S: Store>(s: &S) {
    let c = with_event(s, RemoteStatus::Completed).await;
    notify(s, &c, NotifyAction::Launched(RunId::from("run-1")), 2)
        .await
        .unwrap();
    let c = claim(s, LeaseKind::Notify, "n", t(12), 10).await.remove(0);
    let out = notify(s, &c, NotifyAction::RunPending, 12).await.unwrap();
    assert_eq!(out.notify_status, NotifyStatus::Dispatched);
    let r = row(s, "a").await;
    assert_eq!(r.outbox.due_at, t(22));
    assert_eq!(r.outbox.launched_at, Some(t(2)), "a look does not move it");
    assert_eq!(r.outbox.failures, 0);
    let c = claim(s, LeaseKind::Notify, "n", t(22), 10).await.remove(0);
    let out = notify(s, &c, NotifyAction::RunSucceeded, 23).await.unwrap();
    assert_eq!(
        out,
        Written {
            recorded: None,
            event_version: 1,
            notified_version: 1,
            notify_status: NotifyStatus::Delivered,
            fingerprint: c.row.outbox.fingerprint.clone(),
        }
    );
    let r = row(s, "a").await;
    assert_eq!(r.outbox.dispatch_event, None);
    assert_eq!(r.outbox.run_id, None);
    assert_eq!(r.outbox.lease, None);
    assert!(claim(s, LeaseKind::Notify, "n", t(10_000), 10)
        .await
        .is_empty());
}

/// A busy thread (409) is counted but is no failure; the next claim freezes the latest event.
pub async fn notify_busy_is_not_a_failure_and_rebuilds_snapshot<S: Store>(s: &S) {
    let c = with_event(s, RemoteStatus::InputRequired).await;
    let out = notify(s, &c, NotifyAction::Busy, 2).await.unwrap();
    assert_eq!(out.notify_status, NotifyStatus::Pending);
    let r = row(s, "a").await;
    assert_eq!(r.outbox.busy_count, 1);
    assert_eq!(r.outbox.failures, 0);
    assert_eq!(r.outbox.dispatch_event, None);
    assert_eq!(r.outbox.due_at, t(12));
    // A newer version arrives; the next claim freezes it with fresh counters.
    poll_once(s, "a", 60, |r| report(r, RemoteStatus::Completed, t(60)))
        .await
        .unwrap();
    let c = claim(s, LeaseKind::Notify, "n", t(61), 10).await.remove(0);
    assert_eq!(c.row.outbox.dispatch_version, 2);
    assert_eq!(
        c.row.outbox.dispatch_event.as_ref().unwrap().status,
        RemoteStatus::Completed
    );
    assert_eq!(c.row.outbox.dispatch_attempt, 0);
}

/// A deleted thread (404) dead-letters the snapshot for good.
pub async fn notify_thread_gone_dead_letters<S: Store>(s: &S) {
    let c = with_event(s, RemoteStatus::Completed).await;
    let out = notify(s, &c, NotifyAction::ThreadGone, 2).await.unwrap();
    assert_eq!(out.notify_status, NotifyStatus::DeadLetter);
    assert_eq!(out.notified_version, 1);
    let r = row(s, "a").await;
    assert_eq!(
        r.outbox.dead_letter,
        Some((1, DeadLetterReason::ThreadGone))
    );
    assert!(claim(s, LeaseKind::Notify, "n", t(10_000), 10)
        .await
        .is_empty());
}

/// A launch error counts a failure, keeps the snapshot and its attempt, and backs off.
pub async fn notify_launch_failed_retries_same_attempt<S: Store>(s: &S) {
    let c = with_event(s, RemoteStatus::Completed).await;
    let long = "e".repeat(MAX_STORED_ERROR + 10);
    let out = notify(s, &c, NotifyAction::LaunchFailed(long), 2)
        .await
        .unwrap();
    assert_eq!(out.notify_status, NotifyStatus::Pending);
    let r = row(s, "a").await;
    assert_eq!(r.outbox.failures, 1);
    assert_eq!(r.outbox.dispatch_attempt, 0);
    assert_eq!(
        r.outbox.last_error.as_ref().unwrap().chars().count(),
        MAX_STORED_ERROR
    );
    assert_eq!(r.outbox.due_at, t(2).plus(policy().retry_delay(1)));
    assert_eq!(
        r.outbox.dispatch_event, c.row.outbox.dispatch_event,
        "same snapshot"
    );
    // The next claim keeps the frozen snapshot and its counters.
    let c2 = claim(s, LeaseKind::Notify, "n", t(100), 10).await.remove(0);
    assert_eq!(c2.row.outbox.status, NotifyStatus::Claimed);
    assert_eq!(c2.row.outbox.failures, 1);
    let out = notify(s, &c2, NotifyAction::LaunchFailed("again".into()), 100)
        .await
        .unwrap();
    assert_eq!(out.notify_status, NotifyStatus::Pending);
    let r = row(s, "a").await;
    assert_eq!(r.outbox.failures, 2);
    assert_eq!(r.outbox.due_at, t(100).plus(policy().retry_delay(2)));
}

/// A failed run counts a failure and moves to the next attempt (a new key).
pub async fn notify_run_failed_bumps_attempt<S: Store>(s: &S) {
    let c = with_event(s, RemoteStatus::Completed).await;
    notify(s, &c, NotifyAction::Launched(RunId::from("run-1")), 2)
        .await
        .unwrap();
    let c = claim(s, LeaseKind::Notify, "n", t(12), 10).await.remove(0);
    let out = notify(
        s,
        &c,
        NotifyAction::RunFailed("run ended: error".into()),
        12,
    )
    .await
    .unwrap();
    assert_eq!(out.notify_status, NotifyStatus::Retry);
    let r = row(s, "a").await;
    assert_eq!(r.outbox.dispatch_attempt, 1);
    assert_eq!(r.outbox.failures, 1);
    assert_eq!(r.outbox.run_id, None);
    assert_eq!(r.outbox.due_at, t(12).plus(policy().retry_delay(1)));
    let c = claim(s, LeaseKind::Notify, "n", t(100), 10).await.remove(0);
    assert_eq!(
        c.row.outbox.status,
        NotifyStatus::Retry,
        "retry stays retry when claimed"
    );
    assert_eq!(c.row.outbox.dispatch_attempt, 1);
}

/// An unanswered run lookup is waited out (DOMAIN §3): no failure counted, the run kept, the
/// episode's start kept across unanswered calls and the backoff doubling; once the outage has
/// lasted `max_unavailable` the snapshot is dead-lettered with a reason of its own.
pub async fn notify_lookup_unavailable_waits_uncounted<S: Store>(s: &S) {
    let c = with_event(s, RemoteStatus::Completed).await;
    notify(s, &c, NotifyAction::Launched(RunId::from("run-1")), 2)
        .await
        .unwrap();
    let c = claim(s, LeaseKind::Notify, "n", t(12), 10).await.remove(0);
    let out = notify(
        s,
        &c,
        NotifyAction::LookupUnavailable("gateway down".into()),
        12,
    )
    .await
    .unwrap();
    assert_eq!(out.notify_status, NotifyStatus::Dispatched);
    let r = row(s, "a").await;
    assert_eq!((r.outbox.failures, r.outbox.outages), (0, 1));
    assert_eq!(r.outbox.unavailable_since, Some(t(12)));
    assert_eq!(r.outbox.run_id, Some(RunId::from("run-1")));
    assert_eq!(r.outbox.last_error.as_deref(), Some("gateway down"));
    assert_eq!(r.outbox.due_at, t(12).plus(policy().unavailable_delay(1)));
    let c = claim(s, LeaseKind::Notify, "n", t(30), 10).await.remove(0);
    notify(
        s,
        &c,
        NotifyAction::LookupUnavailable("still down".into()),
        30,
    )
    .await
    .unwrap();
    let r = row(s, "a").await;
    assert_eq!((r.outbox.failures, r.outbox.outages), (0, 2));
    assert_eq!(
        r.outbox.unavailable_since,
        Some(t(12)),
        "the episode's start"
    );
    assert_eq!(r.outbox.due_at, t(30).plus(policy().unavailable_delay(2)));
    let late = 12 + policy().max_unavailable.as_secs() as i64;
    let c = claim(s, LeaseKind::Notify, "n", t(late), 10)
        .await
        .remove(0);
    let out = notify(s, &c, NotifyAction::LookupUnavailable("a day".into()), late)
        .await
        .unwrap();
    assert_eq!(out.notify_status, NotifyStatus::DeadLetter);
    let r = row(s, "a").await;
    assert_eq!(
        r.outbox.dead_letter,
        Some((1, DeadLetterReason::Unavailable))
    );
    assert_eq!(r.outbox.failures, 0);
    assert_eq!(r.outbox.last_error.as_deref(), Some("a day"));
}

/// An unanswered launch retries the same key as pending, uncounted; the next answered step
/// ends the episode.
pub async fn notify_launch_unavailable_keeps_key_and_budget<S: Store>(s: &S) {
    let c = with_event(s, RemoteStatus::Completed).await;
    let out = notify(s, &c, NotifyAction::LaunchUnavailable("refused".into()), 2)
        .await
        .unwrap();
    assert_eq!(out.notify_status, NotifyStatus::Pending);
    let r = row(s, "a").await;
    assert_eq!((r.outbox.failures, r.outbox.dispatch_attempt), (0, 0));
    assert_eq!(
        (r.outbox.outages, r.outbox.unavailable_since),
        (1, Some(t(2)))
    );
    assert_eq!(r.outbox.dispatch_event, c.row.outbox.dispatch_event);
    let c = claim(s, LeaseKind::Notify, "n", t(20), 10).await.remove(0);
    notify(s, &c, NotifyAction::LaunchFailed("bad request".into()), 20)
        .await
        .unwrap();
    let r = row(s, "a").await;
    assert_eq!((r.outbox.failures, r.outbox.outages), (1, 0));
    assert_eq!(r.outbox.unavailable_since, None);
}

/// A spent budget kills the snapshot, not the channel: a newer version reopens it.
pub async fn notify_budget_exhausted_with_newer_version_reopens<S: Store>(s: &S) {
    let c = with_event(s, RemoteStatus::InputRequired).await;
    // Spend the budget on the frozen snapshot.
    let mut c = c;
    for n in 0..FAILURE_BUDGET {
        notify(
            s,
            &c,
            NotifyAction::LaunchFailed(format!("fail {n}")),
            4 + i64::from(n) * 10_000,
        )
        .await
        .unwrap();
        c = claim(
            s,
            LeaseKind::Notify,
            "n",
            t(3 + i64::from(n + 1) * 10_000),
            10,
        )
        .await
        .remove(0);
    }
    assert_eq!(c.row.outbox.failures, FAILURE_BUDGET);
    // A newer version exists before the budget is declared spent.
    let now = 3 + i64::from(FAILURE_BUDGET) * 10_000;
    poll_once(s, "a", now, |r| report(r, RemoteStatus::Completed, t(now)))
        .await
        .unwrap();
    let out = notify(s, &c, NotifyAction::BudgetExhausted, now + 1)
        .await
        .unwrap();
    assert_eq!(out.notify_status, NotifyStatus::Pending);
    assert_eq!(out.notified_version, 1);
    assert_eq!(out.event_version, 2);
    let r = row(s, "a").await;
    assert_eq!(r.outbox.dead_letter, Some((1, DeadLetterReason::Budget)));
    assert_eq!(r.outbox.failures, 0);
    assert_eq!(r.outbox.due_at, t(now + 1));
    // Without a newer version the budget kills the snapshot and the row rests.
    let c = claim(s, LeaseKind::Notify, "n", t(now + 2), 10)
        .await
        .remove(0);
    let out = notify(s, &c, NotifyAction::BudgetExhausted, now + 3)
        .await
        .unwrap();
    assert_eq!(out.notify_status, NotifyStatus::DeadLetter);
    assert_eq!(out.notified_version, 2);
}

/// A delivered snapshot with a newer version waiting reopens the channel for that version.
pub async fn notify_succeeded_with_newer_version_reopens<S: Store>(s: &S) {
    let c = with_event(s, RemoteStatus::InputRequired).await;
    notify(s, &c, NotifyAction::Launched(RunId::from("run-1")), 2)
        .await
        .unwrap();
    poll_once(s, "a", 60, |r| report(r, RemoteStatus::Completed, t(60)))
        .await
        .unwrap();
    let c = claim(s, LeaseKind::Notify, "n", t(61), 10).await.remove(0);
    assert_eq!(
        c.row.outbox.dispatch_version, 1,
        "a dispatched row keeps its snapshot"
    );
    let out = notify(s, &c, NotifyAction::RunSucceeded, 62).await.unwrap();
    assert_eq!(out.notify_status, NotifyStatus::Pending);
    assert_eq!((out.notified_version, out.event_version), (1, 2));
    let c = claim(s, LeaseKind::Notify, "n", t(62), 10).await.remove(0);
    assert_eq!(c.row.outbox.dispatch_version, 2);
    assert_eq!(c.row.outbox.status, NotifyStatus::Claimed);
}

/// A notification write needs its own unexpired lease and the same dispatch version; it releases the lease.
pub async fn notify_guard_refusals<S: Store>(s: &S) {
    let c = with_event(s, RemoteStatus::Completed).await;
    let w = |lease: Lease, version: u64, now: i64| {
        let write = NotifyWrite {
            task_id: "a".into(),
            lease,
            dispatch_version: version,
            action: NotifyAction::RunPending,
        };
        async move {
            s.finish_notifications(vec![write], t(now))
                .await
                .unwrap()
                .remove(0)
        }
    };
    assert_eq!(
        w(with_token(&c.lease, 9), 1, 2).await,
        Err(Refusal::LeaseNotHeld)
    );
    assert_eq!(w(c.lease.clone(), 1, 61).await, Err(Refusal::LeaseExpired));
    assert_eq!(w(c.lease.clone(), 2, 2).await, Err(Refusal::VersionMoved));
    assert!(w(c.lease.clone(), 1, 2).await.is_ok());
    assert_eq!(
        w(c.lease.clone(), 1, 2).await,
        Err(Refusal::LeaseNotHeld),
        "released"
    );
}
