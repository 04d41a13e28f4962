//! The skew guard (issue 11 item 6): an engine whose clock is off the store's by more than
//! `max_clock_skew` claims nothing, so it can neither take leases that look expired only to it
//! nor start remote calls under them.

mod support;

use std::time::Duration;
use support::*;
use tasklatch_core::engine::{ClockCheck, Engine};
use tasklatch_core::ids::WorkerId;

/// An engine of `w`'s store, driver and launcher on its own clock, `ahead_ms` ahead of the
/// world's (negative: behind).
fn skewed_engine(w: &World, worker: &str, ahead_ms: i64) -> TestEngine {
    let clock = ManualClock::new(w.now());
    let at = w.now().as_micros() + ahead_ms * 1_000;
    clock.set(tasklatch_core::time::Timestamp::from_micros(at));
    Engine::new(
        w.store.clone(),
        w.driver.clone(),
        w.launcher.clone(),
        clock,
        WorkerId::from(worker),
        w.policy.clone(),
    )
}

/// A world whose store keeps the world's clock, with one task due for its first poll.
async fn world_with_due_task() -> World {
    let w = World::with_thread().await;
    w.store.set_clock(StoreClock::Follows(w.clock.clone(), 0));
    let submitter = w.engine("submitter");
    w.submit(&submitter, "build", "rt-1", None).await;
    w.driver.on_status("rt-1", [Ok(report("rt-1", "working"))]);
    w
}

#[tokio::test]
async fn a_clock_ahead_of_the_store_by_more_than_the_limit_claims_nothing() {
    let w = world_with_due_task().await;
    assert_eq!(w.policy.max_clock_skew, Duration::from_secs(2));
    for ahead in [20_000, -20_000, 2_500] {
        let e = skewed_engine(&w, "w-skewed", ahead);
        let r = e.run_once().await;
        assert_eq!(r.clock, ClockCheck::Refused(-ahead), "{ahead} ms");
        assert_eq!(
            (r.cancel.claimed, r.poll.claimed, r.notify.claimed),
            (0, 0, 0)
        );
    }
    assert_eq!(w.driver.status_calls("rt-1"), 0, "no remote call was made");
}

#[tokio::test]
async fn a_clock_within_the_limit_claims_and_reports_the_skew() {
    let w = world_with_due_task().await;
    let e = skewed_engine(&w, "w-close", 1_500);
    let r = e.run_once().await;
    assert_eq!(r.clock, ClockCheck::Within(-1_500));
    assert_eq!(r.poll.claimed, 1);
    assert_eq!(w.driver.status_calls("rt-1"), 1);
}

#[tokio::test]
async fn an_unreadable_store_clock_claims_nothing() {
    let w = world_with_due_task().await;
    w.store.set_clock(StoreClock::Unreadable);
    let r = w.engine("w1").run_once().await;
    assert_eq!(r.clock, ClockCheck::Unreadable);
    assert_eq!(r.poll.claimed, 0);
    assert_eq!(w.driver.status_calls("rt-1"), 0);
}

#[tokio::test]
async fn a_store_without_a_clock_is_not_checked() {
    let w = world_with_due_task().await;
    w.store.set_clock(StoreClock::None);
    let r = skewed_engine(&w, "w-skewed", 20_000).run_once().await;
    assert_eq!(r.clock, ClockCheck::NoStoreClock);
    assert_eq!(r.poll.claimed, 1);
}

/// Issue 22 item 10: the rows a poll write hands straight to notification ride on the claims
/// of the same pass; when the notify claim's own clock check refuses (the store's clock became
/// unreadable between the poll claim and it), they are given back, uncounted, not launched.
#[tokio::test]
async fn handed_off_rows_are_released_when_the_notify_claims_clock_check_refuses() {
    let w = world_with_due_task().await;
    w.driver
        .on_status("rt-1", [Ok(completed("rt-1", "all green"))]);
    let e = w.engine("w1");
    e.run_once().await; // the first poll: `working`, nothing to tell
    w.advance(31);
    let gate = w.driver.gate(CallKind::GetStatus, "rt-1");
    let pass = e.run_once();
    let turn_clock = async {
        gate.entered().await;
        w.store.set_clock(StoreClock::Unreadable);
        gate.open();
    };
    let (r, ()) = tokio::join!(pass, turn_clock);
    assert_eq!(r.poll.claimed, 1, "the poll claim's clock check passed");
    assert!(
        w.launcher.starts().is_empty(),
        "nothing launched under a refused clock"
    );
    let row = w.store.rows().await.remove(0);
    assert_eq!(row.remote.status.as_str(), "completed");
    assert_eq!(row.outbox.failures, 0, "released uncounted");
    assert!(row.outbox.lease.is_none(), "given back");
    w.store.set_clock(StoreClock::Follows(w.clock.clone(), 0));
    w.advance(5);
    e.run_once().await;
    assert_eq!(
        w.launcher.starts().len(),
        1,
        "launched once the clock is trusted"
    );
}
