//! Pooler-safe sessions (issue 27 item 5): a connection whose start-up options were dropped (as a
//! pooler does: simulated here by connecting without them) is refused by the pool's check, so it
//! can never read or write a host application's `public.tasks`; the same settings given as
//! database settings (`ALTER DATABASE … SET`, as behind a pooler that cannot carry options) pass.

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{ConnectOptions, Connection, PgPool};
use std::str::FromStr;
use std::time::Duration;
use tasklatch_pg::harness::{with_database, TestDb};
use tasklatch_pg::{open_checked, ConnectError, SessionSettings};

/// The test database's plain URL: no start-up options, as a pooler that drops them passes it on.
fn without_options(db: &TestDb) -> PgConnectOptions {
    let url = with_database(db.admin_url(), db.name());
    PgConnectOptions::from_str(&url).unwrap_or_else(|e| panic!("{e}"))
}

/// A checked pool on `opts` for the default session, giving up after 1 s.
async fn checked_pool(opts: PgConnectOptions) -> Result<PgPool, ConnectError> {
    let pool = PgPoolOptions::new()
        .max_connections(2)
        .acquire_timeout(Duration::from_secs(1));
    open_checked(pool, opts, &SessionSettings::default()).await
}

/// The host application's own `public.tasks`, with one row.
async fn host_tasks(db: &TestDb) {
    sqlx::raw_sql(
        "CREATE TABLE public.tasks (id text PRIMARY KEY, title text); \
         INSERT INTO public.tasks VALUES ('host-1', 'the host application''s row')",
    )
    .execute(db.pool())
    .await
    .unwrap_or_else(|e| panic!("{e}"));
}

async fn count_unqualified_tasks(pool: &PgPool) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM tasks")
        .fetch_one(pool)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

#[tokio::test]
async fn a_connection_without_the_start_up_options_is_refused() {
    let db = TestDb::create().await;
    host_tasks(&db).await;
    // Unchecked, such a connection's unqualified `tasks` is the host's table.
    let mut raw = without_options(&db)
        .connect()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let host_rows: i64 = sqlx::query_scalar("SELECT count(*) FROM tasks")
        .fetch_one(&mut raw)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(host_rows, 1, "the unqualified name reached public.tasks");
    let _ = raw.close().await;

    let e = checked_pool(without_options(&db))
        .await
        .err()
        .unwrap_or_else(|| panic!("a connection without the start-up options was accepted"));
    let text = e.to_string();
    for words in [
        "the connection's search_path is '\"$user\", public' (source: default), not 'tasklatch'",
        "pooler",
        "ALTER ROLE <role> SET search_path = tasklatch",
        "statement_timeout = '30000ms'",
    ] {
        assert!(text.contains(words), "missing {words:?} in: {text}");
    }
    // The start-up options make the same database pass, in tasklatch's schema.
    let opts = SessionSettings::default().apply(without_options(&db));
    let pool = checked_pool(opts).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(count_unqualified_tasks(&pool).await, 0, "tasklatch.tasks");
    pool.close().await;
    db.cleanup().await;
}

#[tokio::test]
async fn database_settings_are_accepted_and_a_missing_timeout_is_named() {
    let db = TestDb::create().await;
    host_tasks(&db).await;
    let name = db.name().to_owned();
    let alter = |setting: &str| format!("ALTER DATABASE \"{name}\" SET {setting}");
    run(&db, &alter("search_path = tasklatch")).await;
    let e = checked_pool(without_options(&db))
        .await
        .err()
        .unwrap_or_else(|| panic!("accepted without the timeouts"));
    let text = e.to_string();
    assert!(
        text.contains(
            "the connection's statement_timeout is '0ms' (source: default), not '30000ms'"
        ),
        "{text}"
    );

    run(&db, &alter("statement_timeout = '30s'")).await;
    run(&db, &alter("lock_timeout = '5s'")).await;
    let pool = checked_pool(without_options(&db))
        .await
        .unwrap_or_else(|e| panic!("database settings refused: {e}"));
    assert_eq!(count_unqualified_tasks(&pool).await, 0, "tasklatch.tasks");
    pool.close().await;
    db.cleanup().await;
}

async fn run(db: &TestDb, sql: &str) {
    sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_owned()))
        .execute(db.pool())
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
}
