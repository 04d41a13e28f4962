//! The store's clock (issue 11 item 6): Postgres answers `store_time` with its own
//! `clock_timestamp()`, the clock every worker of the database measures its skew against.

mod support;

use std::time::{Duration, SystemTime, UNIX_EPOCH};
use support::policy;
use tasklatch_core::store::Store;
use tasklatch_pg::harness::TestDb;
use tasklatch_pg::{connect, PgStore};

fn wall_micros() -> i64 {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(since.as_micros()).unwrap_or(i64::MAX)
}

#[tokio::test]
async fn the_database_clock_is_read_now_in_microseconds() {
    let db = TestDb::create().await;
    let pool = connect(db.url(), 1).await.unwrap();
    let store = PgStore::new(pool.clone(), policy());
    let before = wall_micros();
    let first = store
        .store_time()
        .await
        .unwrap()
        .expect("Postgres keeps a clock");
    tokio::time::sleep(Duration::from_millis(20)).await;
    let second = store
        .store_time()
        .await
        .unwrap()
        .expect("Postgres keeps a clock");
    let after = wall_micros();
    // The same machine's clock: within a second of the wall clock around the calls.
    assert!(
        (before - 1_000_000..=after + 1_000_000).contains(&first.as_micros()),
        "{before} {} {after}",
        first.as_micros()
    );
    // Read now, not at a transaction's start: the sleep shows.
    assert!(second.as_micros() - first.as_micros() >= 20_000);
    pool.close().await;
    db.cleanup().await;
}
