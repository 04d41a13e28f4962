//! The worker's clock guard on Postgres (issue 11 item 6): a host whose clock is off the
//! database's by more than `engine.max_clock_skew_ms` refuses to start, naming the skew; the
//! skew gauge and the refused-pass counter show what the passes measured.

use std::time::Duration;
use tasklatch_core::conformance::support::policy;
use tasklatch_core::engine::ClockCheck;
use tasklatch_core::ports::Clock;
use tasklatch_core::time::Timestamp;
use tasklatch_pg::harness::TestDb;
use tasklatch_pg::PgStore;
use tasklatch_worker::clock::SystemClock;
use tasklatch_worker::clock_guard::check_at_start;
use tasklatch_worker::metrics::Metrics;
use tasklatch_worker::StartError;

/// This host's clock shifted by `ms` milliseconds.
struct Shifted(i64);

impl Clock for Shifted {
    fn now(&self) -> Timestamp {
        Timestamp::from_micros(SystemClock.now().as_micros() + self.0 * 1_000)
    }

    fn monotonic(&self) -> std::time::Duration {
        SystemClock.monotonic()
    }

    async fn sleep(&self, d: std::time::Duration) {
        SystemClock.sleep(d).await;
    }
}

const MAX: Duration = Duration::from_secs(2);

#[tokio::test]
async fn a_host_clock_in_sync_with_the_database_starts_and_sets_the_gauge() {
    let db = TestDb::create().await;
    let store = PgStore::new(db.pool().clone(), policy());
    let metrics = Metrics::new();
    let skew = check_at_start(&store, &SystemClock, MAX, &metrics)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .expect("Postgres keeps a clock");
    assert!(skew.abs() < 1_000, "same machine, {skew} ms");
    assert!(metrics.render().contains("tasklatch_clock_skew_seconds "));
    db.cleanup().await;
}

#[tokio::test]
async fn a_host_clock_off_by_more_than_the_limit_refuses_to_start_either_way() {
    let db = TestDb::create().await;
    let store = PgStore::new(db.pool().clone(), policy());
    for (shift, words) in [(20_000, "ahead of"), (-20_000, "behind")] {
        let metrics = Metrics::new();
        let e = check_at_start(&store, &Shifted(shift), MAX, &metrics)
            .await
            .err()
            .unwrap_or_else(|| panic!("a clock {shift} ms off started"));
        let text = e.to_string();
        assert!(matches!(e, StartError::Clock(_)), "{text}");
        assert!(
            text.contains(words) && text.contains("max_clock_skew_ms"),
            "{text}"
        );
    }
    db.cleanup().await;
}

#[test]
fn the_gauge_follows_the_last_measure_and_refused_passes_are_counted() {
    let metrics = Metrics::new();
    metrics.clock_checked(ClockCheck::Within(500));
    metrics.clock_checked(ClockCheck::Refused(-3_000));
    metrics.clock_checked(ClockCheck::Unreadable);
    let text = metrics.render();
    assert!(text.contains("tasklatch_clock_skew_seconds -3.0"), "{text}");
    assert!(
        text.contains("tasklatch_skew_refused_passes_total 1"),
        "{text}"
    );
}
