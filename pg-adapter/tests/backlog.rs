//! `PgStore::backlog` (issue 23 item 6, the backlog gauges): rows in known states give exact
//! due and overdue counts, oldest due times and dead-letter counts; counts stop at the cap; the
//! read has its own statement timeout and leaves the session as it found it; and on a table of
//! 100,000 finished rows the loop counts are read through the claims' partial indexes (only
//! the dead letters, which no index holds, read the table).

mod support;

use std::time::{Duration, Instant};
use support::{policy, t};
use tasklatch_core::lease::LeaseKind;
use tasklatch_core::status::DeadLetterReason;
use tasklatch_core::store::StoreError;
use tasklatch_pg::harness::TestDb;
use tasklatch_pg::{backlog_query, connect, Backlog, BacklogRequest, LoopBacklog, PgStore};

/// The moment every backlog below is read at.
const NOW: i64 = 1_000;

/// Microseconds of test time `secs` (`support::t`).
fn at(secs: i64) -> i64 {
    t(secs).as_micros()
}

/// Inserts `count` rows with ids `{prefix}{n}` finished and quiet (completed, their
/// notification delivered, no cancel: in no loop's backlog, no dead letter), then applies
/// `set` (an `UPDATE … SET` list) to them.
async fn rows(pool: &sqlx::PgPool, prefix: &str, count: i64, set: &str) {
    sqlx::query(
        "INSERT INTO tasks (id, owner, thread, server, name, remote_task_id, driver_data, \
             created_at, remote_status, remote_result_truncated, remote_updated_at, \
             poll_consecutive_errors, poll_claims, event_version, notified_version, \
             notify_status, notify_due_at, notify_claims, dispatch_version, dispatch_attempt, \
             notify_failures, busy_count, cancel_status, cancel_claims, cancel_failures) \
         SELECT id, 'alice', 'th1', 'srv', id, 'remote-' || id, 'drv', $2, 'completed', false, \
             $2, 0, 1, 1, 1, 'delivered', $2, 1, 1, 0, 0, 0, 'none', 0, 0 \
         FROM (SELECT $1 || lpad(i::text, 6, '0') AS id \
               FROM generate_series(1, $3::bigint) AS i) AS s",
    )
    .bind(prefix)
    .bind(at(0))
    .bind(count)
    .execute(pool)
    .await
    .unwrap_or_else(|e| panic!("insert {prefix}: {e}"));
    if !set.is_empty() {
        let sql = format!("UPDATE tasks SET {set} WHERE id LIKE '{prefix}%'");
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .execute(pool)
            .await
            .unwrap_or_else(|e| panic!("{prefix}: {set}: {e}"));
    }
}

/// One row, `{id}000001`, in the state `set` makes.
async fn row(pool: &sqlx::PgPool, id: &str, set: &str) {
    rows(pool, id, 1, set).await;
}

/// A lease held by `w` until `until` (test seconds) on loop `kind`'s columns.
fn lease(kind: &str, until: i64) -> String {
    format!(
        "{kind}_lease_owner = 'w', {kind}_lease_token = 1, {kind}_lease_expires_at = {}",
        at(until)
    )
}

/// Rows in every state that matters to the backlog at [`NOW`] (threshold 60 s, so overdue
/// means due before t(940)). The expected backlog is [`expected`].
async fn known_rows(pool: &sqlx::PgPool) {
    poll_rows(pool).await;
    notify_rows(pool).await;
    cancel_rows(pool).await;
    dead_letters(pool).await;
}

/// The poll loop's rows of [`known_rows`].
async fn poll_rows(pool: &sqlx::PgPool) {
    let working = "remote_status = 'working', notify_status = 'none'";
    // The poll loop: due (overdue or not, at the threshold and at now exactly, an expired
    // lease), not due (leased, in the future, a cancel in progress).
    for (id, set) in [
        ("p-old", format!("poll_next_at = {}", at(100))),
        ("p-recent", format!("poll_next_at = {}", at(990))),
        ("p-threshold", format!("poll_next_at = {}", at(940))),
        ("p-now", format!("poll_next_at = {}", at(NOW))),
        (
            "p-expired",
            format!("poll_next_at = {}, {}", at(500), lease("poll", NOW)),
        ),
        (
            "p-leased",
            format!("poll_next_at = {}, {}", at(50), lease("poll", NOW + 1)),
        ),
        ("p-future", format!("poll_next_at = {}", at(NOW + 1))),
    ] {
        row(pool, id, &format!("{working}, {set}")).await;
    }
}

/// The notification loop's rows of [`known_rows`]: undelivered work in each claimable status,
/// and rows that are not claimable (leased, in the future, delivered).
async fn notify_rows(pool: &sqlx::PgPool) {
    let undelivered = "event_version = 2, notified_version = 1, dispatch_version = 2";
    for (id, set) in [
        (
            "n-pending",
            format!("notify_status = 'pending', notify_due_at = {}", at(200)),
        ),
        (
            "n-retry",
            format!("notify_status = 'retry', notify_due_at = {}", at(970)),
        ),
        (
            "n-dispatched",
            format!(
                "notify_status = 'dispatched', notify_due_at = {}, {}",
                at(100),
                lease("notify", NOW + 30)
            ),
        ),
        (
            "n-future",
            format!("notify_status = 'pending', notify_due_at = {}", at(2_000)),
        ),
    ] {
        row(pool, id, &format!("{undelivered}, {set}")).await;
    }
    row(pool, "n-delivered", &format!("notify_due_at = {}", at(5))).await;
}

/// The cancel loop's rows of [`known_rows`]: one due (its poll stands still though it is due),
/// one leased, one in the future, one done.
async fn cancel_rows(pool: &sqlx::PgPool) {
    let cancelling = "remote_status = 'working', notify_status = 'none', \
                      cancel_requested_at = 0, cancel_status = 'requested'";
    for (id, set) in [
        (
            "c-due",
            format!("cancel_due_at = {}, poll_next_at = {}", at(300), at(10)),
        ),
        (
            "c-leased",
            format!("cancel_due_at = {}, {}", at(0), lease("cancel", NOW + 50)),
        ),
        ("c-future", format!("cancel_due_at = {}", at(1_500))),
    ] {
        row(pool, id, &format!("{cancelling}, {set}")).await;
    }
    row(
        pool,
        "c-done",
        "cancel_requested_at = 0, cancel_status = 'done'",
    )
    .await;
}

/// Dead letters of every kind and reason, a requeued one (its record kept, no longer counted),
/// and a row dead-lettered twice (its notification and its cancel).
async fn dead_letters(pool: &sqlx::PgPool) {
    let dead = |reason: &str| {
        format!("notify_status = 'dead_letter', dead_letter_version = 1, dead_letter_reason = '{reason}'")
    };
    rows(pool, "d-gone", 1, &dead("thread_gone")).await;
    rows(pool, "d-budget", 2, &dead("budget")).await;
    rows(pool, "d-unavailable", 2, &dead("unavailable")).await;
    let requeued = format!(
        "event_version = 2, notify_status = 'pending', notify_due_at = {}, \
         dead_letter_version = 1, dead_letter_reason = 'budget'",
        at(9_000)
    );
    row(pool, "d-requeued", &requeued).await;
    rows(
        pool,
        "d-cancel-budget",
        2,
        "remote_status = 'working', notify_status = 'none', cancel_requested_at = 0, \
         cancel_status = 'dead_letter', cancel_failures = 5",
    )
    .await;
    let both = format!(
        "{}, remote_status = 'working', cancel_requested_at = 0, \
         cancel_status = 'dead_letter', cancel_unavailable_since = {}",
        dead("budget"),
        at(100)
    );
    row(pool, "d-both", &both).await;
}

/// The backlog of [`known_rows`] at [`NOW`] with a 60 s threshold.
fn expected() -> Backlog {
    Backlog {
        now: t(NOW),
        // p-old, p-recent, p-threshold, p-now, p-expired; overdue: p-old, p-expired.
        poll: LoopBacklog {
            due: 5,
            overdue: 2,
            oldest_due: Some(t(100)),
        },
        // n-pending, n-retry; overdue: n-pending.
        notify: LoopBacklog {
            due: 2,
            overdue: 1,
            oldest_due: Some(t(200)),
        },
        cancel: LoopBacklog {
            due: 1,
            overdue: 1,
            oldest_due: Some(t(300)),
        },
        // notify: thread_gone 1, budget 2 + d-both, unavailable 2; cancel: budget 2,
        // unavailable d-both (no two counts alike: a swapped reason shows).
        dead_letters: [1, 3, 2, 2, 1],
    }
}

fn request(overdue_after: Duration) -> BacklogRequest {
    BacklogRequest::new(t(NOW), overdue_after)
}

#[tokio::test]
async fn the_backlog_counts_rows_in_known_states_exactly() {
    let db = TestDb::create().await;
    let store = PgStore::new(db.pool().clone(), policy());
    let empty = store
        .backlog(request(Duration::from_secs(60)))
        .await
        .unwrap();
    assert_eq!(empty.poll, LoopBacklog::default(), "an empty table");
    assert_eq!(empty.dead_letters, [0; 5]);
    known_rows(db.pool()).await;

    let b = store
        .backlog(request(Duration::from_secs(60)))
        .await
        .unwrap();
    assert_eq!(b, expected());
    assert_eq!(
        b.of(LeaseKind::Poll).oldest_due_age(b.now),
        Duration::from_secs(900)
    );
    assert_eq!(
        b.of(LeaseKind::Notify).oldest_due_age(b.now),
        Duration::from_secs(800)
    );
    assert_eq!(
        b.of(LeaseKind::Cancel).oldest_due_age(b.now),
        Duration::from_secs(700)
    );
    assert_eq!(
        b.dead_letters_of("cancel", DeadLetterReason::Unavailable),
        1
    );

    // Overdue is strictly "due for longer than": with no threshold every due row but the one
    // due at now exactly is overdue.
    let b = store.backlog(request(Duration::ZERO)).await.unwrap();
    assert_eq!((b.poll.due, b.poll.overdue), (5, 4));
    assert_eq!((b.notify.overdue, b.cancel.overdue), (2, 1));
    // A threshold longer than anything has waited: nothing is overdue.
    let b = store
        .backlog(request(Duration::from_secs(901)))
        .await
        .unwrap();
    assert_eq!(
        (b.poll.overdue, b.notify.overdue, b.cancel.overdue),
        (0, 0, 0)
    );

    // The same rows a second later: p-leased's lease has expired, it is due and the oldest;
    // p-future is due; p-threshold has now waited longer than the threshold.
    let later = BacklogRequest::new(t(NOW + 1), Duration::from_secs(60));
    let b = store.backlog(later).await.unwrap();
    assert_eq!((b.poll.due, b.poll.overdue), (7, 4));
    assert_eq!(b.poll.oldest_due, Some(t(50)));
    db.cleanup().await;
}

#[tokio::test]
async fn every_count_stops_at_the_cap() {
    let db = TestDb::create().await;
    let store = PgStore::new(db.pool().clone(), policy());
    known_rows(db.pool()).await;
    let capped = BacklogRequest {
        cap: 2,
        ..request(Duration::from_secs(60))
    };
    let b = store.backlog(capped).await.unwrap();
    assert_eq!((b.poll.due, b.poll.overdue), (2, 2));
    assert_eq!(b.poll.oldest_due, Some(t(100)), "the oldest is still found");
    assert_eq!((b.notify.due, b.notify.overdue), (2, 1));
    // At most two dead-lettered rows are read (a row can hold two dead letters).
    let notify: u64 = b.dead_letters[..3].iter().sum();
    let cancel: u64 = b.dead_letters[3..].iter().sum();
    assert!(notify <= 2 && cancel <= 2 && notify + cancel >= 2, "{b:?}");
    let none = BacklogRequest {
        cap: 0,
        ..request(Duration::from_secs(60))
    };
    assert!(matches!(
        store.backlog(none).await,
        Err(StoreError::Invalid(_))
    ));
    db.cleanup().await;
}

#[tokio::test]
async fn the_read_has_its_own_timeout_and_leaves_the_session_as_it_was() {
    let db = TestDb::create().await;
    // One connection: the session the backlog ran in is the one looked at afterwards.
    let pool = connect(db.url(), 1).await.unwrap();
    let store = PgStore::new(pool.clone(), policy());
    // Another session holds the table locked: the read waits, then gives up after its own
    // 300 ms (the session's lock timeout is 5 s, its statement timeout 30 s).
    let mut locker = db.pool().begin().await.unwrap();
    sqlx::query("LOCK TABLE tasks IN ACCESS EXCLUSIVE MODE")
        .execute(&mut *locker)
        .await
        .unwrap();
    let short = BacklogRequest {
        timeout: Duration::from_millis(300),
        ..request(Duration::from_secs(60))
    };
    let started = Instant::now();
    let refused = store.backlog(short).await;
    let took = started.elapsed();
    assert!(
        matches!(refused, Err(StoreError::Unavailable(_))),
        "{refused:?}"
    );
    assert!(took < Duration::from_secs(3), "waited {took:?}");
    locker.rollback().await.unwrap();
    // Both settings were local to the backlog's transaction.
    store.backlog(short).await.unwrap();
    let (timeout, read_only): (String, String) = sqlx::query_as(
        "SELECT current_setting('statement_timeout'), current_setting('transaction_read_only')",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!((timeout.as_str(), read_only.as_str()), ("30s", "off"));
    pool.close().await;
    db.cleanup().await;
}

/// The plan of the backlog statement at [`NOW`] under `mode` (custom or generic), as text.
async fn plan(conn: &mut sqlx::PgConnection, mode: &str) -> String {
    let run = |q: String| sqlx::raw_sql(sqlx::AssertSqlSafe(q));
    run(format!("SET plan_cache_mode = {mode}"))
        .execute(&mut *conn)
        .await
        .unwrap();
    let name = format!("backlog_{mode}");
    run(format!(
        "PREPARE {name} (bigint, bigint, bigint) AS {}",
        backlog_query()
    ))
    .execute(&mut *conn)
    .await
    .unwrap();
    let explain = format!(
        "EXPLAIN (ANALYZE, BUFFERS) EXECUTE {name}({}, {}, 10000)",
        at(NOW),
        at(NOW - 60)
    );
    let lines: Vec<(String,)> = sqlx::query_as(sqlx::AssertSqlSafe(explain))
        .fetch_all(&mut *conn)
        .await
        .unwrap();
    lines
        .into_iter()
        .map(|(l,)| l)
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_big_table_every_count_is_read_through_an_index() {
    let db = TestDb::create().await;
    rows(db.pool(), "fin-", 100_000, "").await;
    known_rows(db.pool()).await;
    sqlx::query("ANALYZE tasks")
        .execute(db.pool())
        .await
        .unwrap();
    let store = PgStore::new(db.pool().clone(), policy());
    let b = store
        .backlog(request(Duration::from_secs(60)))
        .await
        .unwrap();
    assert_eq!(b, expected(), "the finished rows are in no backlog");

    let mut conn = <sqlx::PgConnection as sqlx::Connection>::connect(db.url())
        .await
        .unwrap();
    for mode in ["force_custom_plan", "force_generic_plan"] {
        let p = plan(&mut conn, mode).await;
        eprintln!("-- backlog ({mode}):\n{p}");
        let indexes = [
            "tasks_poll_due_v2",
            "tasks_notify_due",
            "tasks_cancel_due",
            "tasks_dead_letters",
        ];
        for index in indexes {
            assert!(p.contains(index), "{mode}: no {index}\n{p}");
        }
        assert!(
            !p.contains("Seq Scan on tasks"),
            "{mode}: a count scans the table\n{p}"
        );
    }
    drop(conn);
    db.cleanup().await;
}
