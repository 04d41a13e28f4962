//! A slow pool acquire is not clock skew (issue 23 item 5). After a database restart the
//! skew guard read 4.3 s of waiting for a pooled connection as 2.2 s of skew and refused the
//! claims. Here the pool's only connection is held by another query for several seconds while
//! the skew is measured — the measure the start-up check and every pass make
//! (`tasklatch_core::engine::measure` around `Store::store_time`): the call waits all that
//! time, and the skew it reports is still the machine's (near zero: one host), within the limit.

use sqlx::postgres::PgPoolOptions;
use std::time::{Duration, Instant};
use tasklatch_core::conformance::support::policy;
use tasklatch_core::engine::{measure, ClockCheck};
use tasklatch_pg::harness::TestDb;
use tasklatch_pg::PgStore;
use tasklatch_worker::clock::SystemClock;

/// How long the other query holds the pool's only connection ([`HOLD_SQL`]).
const HOLD: Duration = Duration::from_secs(6);
/// The query that holds it.
const HOLD_SQL: &str = "SELECT pg_sleep(6)";
/// The skew limit (the default `engine.max_clock_skew_ms`).
const MAX: Duration = Duration::from_secs(2);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_pool_acquire_is_not_read_as_clock_skew() {
    let db = TestDb::create().await;
    let pool = PgPoolOptions::new()
        .max_connections(1)
        .acquire_timeout(Duration::from_secs(30))
        .connect(db.url())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let store = PgStore::new(pool.clone(), policy());
    let holder = {
        let pool = pool.clone();
        tokio::spawn(async move { sqlx::query(HOLD_SQL).execute(&pool).await })
    };
    tokio::time::sleep(Duration::from_millis(200)).await; // the holder has the connection

    let started = Instant::now();
    let check = measure(&store, &SystemClock, MAX).await;
    let took = started.elapsed();
    assert!(
        took >= HOLD - Duration::from_secs(1),
        "the measure did not wait for the held connection ({took:?}): the test proves nothing"
    );
    match check {
        ClockCheck::Within(ms) => assert!(
            ms.abs() < 500,
            "one host, yet {ms} ms of skew after waiting {took:?} for a connection"
        ),
        other => panic!("after waiting {took:?} for a connection the measure found {other:?}"),
    }
    holder
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|e| panic!("{e}"));
    eprintln!("waited {took:?} for the pool's only connection; measured {check:?}");
    pool.close().await;
    db.cleanup().await;
}
