//! The wake-up listener against a real Postgres: a notification wakes every lane within
//! milliseconds, and a burst of 10,000 notifications leaves each lane one pending pass, not
//! 10,000; the store's own writes send them (migration 0007) at commit — a submit, a new event
//! version, a cancel request — and nothing else does (claims, rolled-back writes).

use std::sync::Arc;
use std::time::{Duration, Instant};
use tasklatch_core::conformance::support::{alice, claim, report, submitted, t};
use tasklatch_core::lease::LeaseKind;
use tasklatch_core::status::RemoteStatus;
use tasklatch_core::store::{CancelTarget, PollWrite, Store};
use tasklatch_pg::harness::TestDb;
use tasklatch_pg::PgStore;
use tasklatch_worker::metrics::Metrics;
use tasklatch_worker::wakeup::{listen, Waker, CHANNEL};
use tokio::sync::watch;
use tokio::sync::Notify;

async fn notify(db: &TestDb, count: u32) {
    sqlx::query("SELECT pg_notify($1, n::text) FROM generate_series(1, $2) AS n")
        .bind(CHANNEL)
        .bind(i64::from(count))
        .execute(db.pool())
        .await
        .unwrap_or_else(|e| panic!("NOTIFY: {e}"));
}

fn wakeups_seen(metrics: &Metrics) -> u64 {
    let text = metrics.render();
    text.lines()
        .find_map(|l| l.strip_prefix("tasklatch_wakeups_total "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_notify_wakes_every_lane_and_a_burst_is_coalesced() {
    let db = TestDb::create().await;
    let options = db.url().parse().unwrap_or_else(|e| panic!("{e}"));
    let waker = Waker::new(2);
    let metrics = Arc::new(Metrics::new());
    let (stop_tx, stop_rx) = watch::channel(false);
    let listener = tokio::spawn(listen(options, waker.clone(), metrics.clone(), stop_rx));
    let lanes: Vec<_> = (0..2)
        .map(|i| waker.lane(i).unwrap_or_else(|| panic!("lane {i}")))
        .collect();

    // The listener wakes every lane once when it connects (a notification may have been missed).
    for lane in &lanes {
        tokio::time::timeout(Duration::from_secs(10), lane.notified())
            .await
            .unwrap_or_else(|_| panic!("no wake-up on connect"));
    }
    let sent = Instant::now();
    notify(&db, 1).await;
    for lane in &lanes {
        tokio::time::timeout(Duration::from_secs(2), lane.notified())
            .await
            .unwrap_or_else(|_| panic!("the NOTIFY did not wake the lane"));
    }
    let latency = sent.elapsed();
    assert!(
        latency < Duration::from_millis(500),
        "woken after {latency:?}"
    );

    // A burst while the lanes are busy: each lane keeps one permit.
    notify(&db, 10_000).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    while wakeups_seen(&metrics) < 10_001 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(wakeups_seen(&metrics), 10_001);
    for lane in &lanes {
        tokio::time::timeout(Duration::from_millis(100), lane.notified())
            .await
            .unwrap_or_else(|_| panic!("the burst left no pass"));
        let again = tokio::time::timeout(Duration::from_millis(100), lane.notified()).await;
        assert!(
            again.is_err(),
            "10,000 notifications left more than one pass"
        );
    }

    let _ = stop_tx.send(true);
    tokio::time::timeout(Duration::from_secs(5), listener)
        .await
        .unwrap_or_else(|_| panic!("the listener did not stop"))
        .unwrap_or_else(|e| panic!("{e}"));
    db.cleanup().await;
    eprintln!("one NOTIFY woke both lanes in {latency:?}; 10,000 left one pass each");
}

/// Waits for `lane`'s wake-up (`true`) or `within` without one (`false`).
async fn woken(lane: &Notify, within: Duration) -> bool {
    tokio::time::timeout(within, lane.notified()).await.is_ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stores_writes_wake_the_lanes_at_commit_and_only_when_there_is_work() {
    let db = TestDb::create().await;
    let store = PgStore::new(
        db.pool().clone(),
        tasklatch_core::conformance::support::policy(),
    );
    let options = db.url().parse().unwrap_or_else(|e| panic!("{e}"));
    let waker = Waker::new(1);
    let metrics = Arc::new(Metrics::new());
    let (stop_tx, stop_rx) = watch::channel(false);
    let listener = tokio::spawn(listen(options, waker.clone(), metrics, stop_rx));
    let lane = waker.lane(0).unwrap_or_else(|| panic!("lane 0"));
    let (soon, quiet) = (Duration::from_secs(2), Duration::from_millis(300));
    assert!(
        woken(&lane, Duration::from_secs(10)).await,
        "no wake-up on connect"
    );

    store
        .insert_task(submitted("a", t(0)))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(woken(&lane, soon).await, "a submit did not wake the lane");

    let claimed = claim(&store, LeaseKind::Poll, "w", t(0), 10).await;
    assert_eq!(claimed.len(), 1);
    assert!(!woken(&lane, quiet).await, "a claim woke the lane");

    let c = &claimed[0];
    let write = PollWrite {
        task_id: "a".into(),
        lease: c.lease.clone(),
        completed_at: t(1),
        update: report(&c.row, RemoteStatus::InputRequired, t(1)),
    };
    store
        .apply_polls(vec![write], t(1))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        woken(&lane, soon).await,
        "a new event version did not wake the lane"
    );

    let mut tx = db.pool().begin().await.unwrap_or_else(|e| panic!("{e}"));
    sqlx::query("UPDATE tasks SET event_version = event_version + 1 WHERE id = 'a'")
        .execute(&mut *tx)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    tx.rollback().await.unwrap_or_else(|e| panic!("{e}"));
    assert!(
        !woken(&lane, quiet).await,
        "a rolled-back write woke the lane"
    );

    store
        .request_cancel(&alice(), &CancelTarget::Id("a".into()), t(2))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        woken(&lane, soon).await,
        "a cancel request did not wake the lane"
    );

    let _ = stop_tx.send(true);
    let _ = tokio::time::timeout(Duration::from_secs(5), listener).await;
    db.cleanup().await;
}
