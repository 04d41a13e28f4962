//! Online upgrades (issue 11 item 12): the indexes added to a live `tasks` table are built
//! CONCURRENTLY, outside a transaction, so writers are never queued behind an index build —
//! even while the build waits for a transaction that was open when it started.

use std::time::{Duration, Instant};
use tasklatch_pg::harness::TestDb;
use tasklatch_pg::{
    connect, connect_with, migrate, migrator, SchemaName, SessionSettings, MIGRATOR,
};

/// The last migration applied in production before issue 11; every index after it is new.
const LAST_BEFORE_ONLINE_INDEXES: i64 = 8;

/// A write to `tasks` valid on every schema version: it takes the table lock every store
/// write takes (ROW EXCLUSIVE), on no row.
const WRITE: &str = "UPDATE tasks SET name = name WHERE id = 'none'";

/// The statements of a migration, without its comment lines.
fn statements(sql: &str) -> String {
    sql.lines()
        .filter(|l| !l.trim_start().starts_with("--"))
        .collect::<Vec<_>>()
        .join("\n")
        .to_uppercase()
}

#[test]
fn every_new_index_is_built_concurrently_outside_a_transaction() {
    let mut seen = 0;
    for m in MIGRATOR
        .iter()
        .filter(|m| m.version > LAST_BEFORE_ONLINE_INDEXES)
    {
        let sql = statements(m.sql.as_str());
        if sql.contains("CREATE INDEX") || sql.contains("CREATE UNIQUE INDEX") {
            seen += 1;
            assert!(
                m.no_tx,
                "migration {} builds an index inside a transaction",
                m.version
            );
            assert!(sql.contains(" CONCURRENTLY "), "migration {}", m.version);
            assert_eq!(
                sql.matches(';').count(),
                1,
                "migration {}: one statement",
                m.version
            );
        }
    }
    assert!(seen >= 2, "the retention and context indexes");
}

#[tokio::test]
async fn writes_go_on_while_an_index_build_waits() {
    let db = TestDb::create_empty().await;
    let schema = SchemaName::default();
    let pool = connect(db.url(), 4).await.unwrap();
    migrator(&schema)
        .run_to(LAST_BEFORE_ONLINE_INDEXES, &pool)
        .await
        .unwrap();
    let writer = connect_with(
        db.url().parse().unwrap(),
        2,
        &SessionSettings {
            lock_timeout: Duration::from_secs(1),
            ..SessionSettings::default()
        },
    )
    .await
    .unwrap();
    // The writer is today's store code's connection settings, but the schema is an old one
    // (today's row has columns added later, e.g. 0014's), so the write below is a plain
    // statement: an UPDATE takes the same table lock (ROW EXCLUSIVE) as every store write.
    sqlx::query(WRITE).execute(&writer).await.unwrap();

    // A transaction that wrote to tasks and is still open (a slow writer, a host
    // application's transaction) when the upgrade starts.
    let mut open = pool.begin().await.unwrap();
    sqlx::query("LOCK TABLE tasks IN ROW EXCLUSIVE MODE")
        .execute(&mut *open)
        .await
        .unwrap();
    // The upgrade and, beside it in the same task, what happens meanwhile.
    let meanwhile = async {
        // The index build is under way and waits for that transaction.
        let started = Instant::now();
        loop {
            let waiting: bool = sqlx::query_scalar(
                "SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid <> pg_backend_pid() \
                 AND query ILIKE '%create index%tasks_finished%' AND wait_event_type = 'Lock')",
            )
            .fetch_one(db.pool())
            .await
            .unwrap();
            if waiting {
                break;
            }
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "the index build never started waiting"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        // Meanwhile a write to tasks is not queued behind the build.
        let written = sqlx::query(WRITE).execute(&writer).await;
        open.commit().await.unwrap();
        written
    };
    let (done, written) = tokio::time::timeout(Duration::from_secs(60), async {
        tokio::join!(migrate(&pool, &schema), meanwhile)
    })
    .await
    .expect("the upgrade finished");
    assert!(
        written.is_ok(),
        "a write during the index build: {written:?}"
    );
    assert!(done.is_ok(), "{done:?}");
    let valid: Vec<bool> = sqlx::query_scalar(
        "SELECT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid \
         WHERE c.relname IN ('tasks_finished', 'tasks_recent') ORDER BY c.relname",
    )
    .fetch_all(db.pool())
    .await
    .unwrap();
    assert_eq!(valid, [true, true]);
    writer.close().await;
    pool.close().await;
    db.cleanup().await;
}
