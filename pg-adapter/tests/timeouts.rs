//! No store call waits forever on a row lock (issue 11 item 10): every pooled connection starts
//! with a `lock_timeout` and a `statement_timeout`, and a write that needs a row another
//! transaction holds fails as unavailable within the lock timeout instead of hanging.

mod support;

use std::time::{Duration, Instant};
use support::{alice, claim, policy, report, submitted, t};
use tasklatch_core::lease::LeaseKind;
use tasklatch_core::status::RemoteStatus;
use tasklatch_core::store::{CancelTarget, PollWrite, Store, StoreError};
use tasklatch_pg::harness::TestDb;
use tasklatch_pg::{connect, connect_with, PgStore, SessionSettings};

const LOCK_TIMEOUT: Duration = Duration::from_millis(300);
/// Far above the lock timeout: a call still waiting then is hanging.
const HANGING: Duration = Duration::from_secs(10);

#[tokio::test]
async fn pooled_connections_start_with_both_timeouts() {
    let db = TestDb::create().await;
    let pool = connect(db.url(), 1).await.unwrap();
    let (lock, statement): (String, String) = sqlx::query_as(
        "SELECT current_setting('lock_timeout'), current_setting('statement_timeout')",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!((lock.as_str(), statement.as_str()), ("5s", "30s"));
    pool.close().await;
    db.cleanup().await;
}

#[tokio::test]
async fn a_write_on_a_locked_row_fails_within_the_lock_timeout() {
    let db = TestDb::create().await;
    let session = SessionSettings {
        lock_timeout: LOCK_TIMEOUT,
        ..SessionSettings::default()
    };
    let pool = connect_with(db.url().parse().unwrap(), 4, &session)
        .await
        .unwrap();
    let store = PgStore::new(pool.clone(), policy());
    store.insert_task(submitted("a", t(0))).await.unwrap();
    let claimed = claim(&store, LeaseKind::Poll, "w", t(0), 10).await;
    let lease = claimed[0].lease.clone();
    let update = report(&claimed[0].row, RemoteStatus::Working, t(1));

    // Another session (an operator's psql, a host application) holds the row.
    let mut holder = db.pool().begin().await.unwrap();
    sqlx::query("SELECT id FROM tasks WHERE id = 'a' FOR UPDATE")
        .execute(&mut *holder)
        .await
        .unwrap();

    let started = Instant::now();
    let cancel = tokio::time::timeout(
        HANGING,
        store.request_cancel(&alice(), &CancelTarget::Id("a".into()), t(1)),
    )
    .await
    .expect("the cancel request waited on the row lock past the lock timeout");
    assert!(
        matches!(cancel, Err(StoreError::Unavailable(_))),
        "{cancel:?}"
    );
    let guarded = tokio::time::timeout(
        HANGING,
        store.apply_polls(
            vec![PollWrite {
                task_id: "a".into(),
                lease,
                completed_at: t(1),
                update,
            }],
            t(1),
        ),
    )
    .await
    .expect("the guarded write waited on the row lock past the lock timeout");
    assert!(
        matches!(guarded, Err(StoreError::Unavailable(_))),
        "{guarded:?}"
    );
    let waited = started.elapsed();
    assert!(
        waited < 4 * LOCK_TIMEOUT + Duration::from_secs(1),
        "two calls took {waited:?}"
    );

    // Once the lock is gone, the same write goes through (it was refused, not lost).
    holder.rollback().await.unwrap();
    let cancel = store
        .request_cancel(&alice(), &CancelTarget::Id("a".into()), t(2))
        .await;
    assert!(cancel.is_ok(), "{cancel:?}");
    pool.close().await;
    db.cleanup().await;
}
