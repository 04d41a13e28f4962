//! The worker behind Debian's PgBouncer 1.18 (issue 27 item 5), on a throwaway cluster:
//!
//! - transaction pooling with `ignore_startup_parameters = extra_float_digits,options` (the
//!   usual advice) drops the worker's start-up options: its pool refuses every connection,
//!   naming `search_path` and the pooler, so the host application's `public.tasks` is never
//!   read or written;
//! - without `options` in `ignore_startup_parameters`, PgBouncer 1.18 refuses the connection
//!   itself (`unsupported startup parameter: options`): it cannot carry start-up options at all;
//! - with the settings on the database (`ALTER DATABASE … SET`), the worker's pool passes its
//!   check through session pooling and means `tasklatch.tasks`; through transaction pooling it
//!   is refused by the pooling probe (`tasklatch_pg::check_session_pooling`), because there
//!   (shown too) two client connections' sqlx statements meet on one server backend.
//!
//! PgBouncer must be installed (`scripts/install-deb-tools`): a missing binary fails the test.

#[path = "support/example.rs"]
mod example;

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{Connection, PgConnection};
use std::str::FromStr;
use std::time::Duration;
use tasklatch_pg::harness::pgbouncer::{Pgbouncer, PoolMode};
use tasklatch_pg::harness::{LocalCluster, TestDb};
use tasklatch_pg::{open_checked, SessionSettings};
use tasklatch_worker::run::connect;
use tasklatch_worker::StartError;

/// The usual advice for sqlx/JDBC clients behind PgBouncer: ignore what it cannot track.
const IGNORE_OPTIONS: &str = "extra_float_digits,options";

fn cluster() -> LocalCluster {
    LocalCluster::start().unwrap_or_else(|e| {
        panic!("cannot start a throwaway cluster (PostgreSQL server binaries needed): {e}")
    })
}

/// A migrated database on `cluster` holding a host application's `public.tasks` with one row.
async fn database(cluster: &LocalCluster) -> TestDb {
    let db = TestDb::create_on(cluster.server())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    run(
        &db,
        "CREATE TABLE public.tasks (id text PRIMARY KEY, title text); \
         INSERT INTO public.tasks VALUES ('host-1', 'the host application''s row')",
    )
    .await;
    db
}

fn bouncer(cluster: &LocalCluster, mode: PoolMode, ignore: &str) -> Pgbouncer {
    Pgbouncer::start(cluster.port(), mode, ignore)
        .unwrap_or_else(|e| panic!("cannot start pgbouncer: {e}"))
}

/// The worker's pool through `bouncer`, giving up after 1 s.
async fn worker_pool(bouncer: &Pgbouncer, db: &TestDb) -> Result<sqlx::PgPool, StartError> {
    let settings = example::settings_for(&bouncer.url(db.name()), "connect_timeout_ms = 1000");
    connect(&settings).await
}

#[tokio::test]
async fn a_pooler_that_drops_or_refuses_the_start_up_options_is_refused_loudly() {
    let cluster = cluster();
    let db = database(&cluster).await;

    let transaction = bouncer(&cluster, PoolMode::Transaction, IGNORE_OPTIONS);
    let e = worker_pool(&transaction, &db)
        .await
        .err()
        .unwrap_or_else(|| panic!("a pool without its search_path was opened"));
    let text = e.to_string();
    for words in [
        "search_path is '\"$user\", public'",
        "not 'tasklatch'",
        "pooler",
    ] {
        assert!(text.contains(words), "missing {words:?} in: {text}");
    }

    let session = bouncer(&cluster, PoolMode::Session, "extra_float_digits");
    let e = worker_pool(&session, &db)
        .await
        .err()
        .unwrap_or_else(|| panic!("pgbouncer accepted the options start-up parameter"));
    let text = e.to_string();
    for words in [
        "unsupported startup parameter: options",
        "list options in its ignore_startup_parameters",
    ] {
        assert!(
            text.contains(words),
            "missing {words:?} in: {text}\n{}",
            session.log()
        );
    }
    db.cleanup().await;
}

/// `db` with the worker's session as database settings (how to run behind PgBouncer 1.18).
async fn with_database_settings(db: &TestDb) {
    let name = db.name().to_owned();
    for setting in [
        "search_path = tasklatch",
        "statement_timeout = '30s'",
        "lock_timeout = '5s'",
    ] {
        run(db, &format!("ALTER DATABASE \"{name}\" SET {setting}")).await;
    }
}

#[tokio::test]
async fn database_settings_pass_session_pooling_and_transaction_pooling_is_refused() {
    let cluster = cluster();
    let db = database(&cluster).await;
    with_database_settings(&db).await;
    let session = bouncer(&cluster, PoolMode::Session, IGNORE_OPTIONS);
    let pool = worker_pool(&session, &db)
        .await
        .unwrap_or_else(|e| panic!("session pooling: {e}\n{}", session.log()));
    let mut conn = pool.acquire().await.unwrap_or_else(|e| panic!("{e}"));
    let schema: String = sqlx::query_scalar("SELECT current_schema()")
        .fetch_one(&mut *conn)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(schema, "tasklatch");
    drop(conn);
    pool.close().await;

    let transaction = bouncer(&cluster, PoolMode::Transaction, IGNORE_OPTIONS);
    let e = worker_pool(&transaction, &db)
        .await
        .err()
        .unwrap_or_else(|| panic!("a worker pool opened behind a transaction pooler"));
    assert!(matches!(e, StartError::Pooler(_)), "{e:?}");
    let text = e.to_string();
    for words in [
        "pooler: a transaction pooler is in front of the database",
        "pool_mode = transaction",
        "sqlx_s_N",
        "max_prepared_statements",
        "Use pool_mode = session",
    ] {
        assert!(text.contains(words), "missing {words:?} in: {text}");
    }
    db.cleanup().await;
}

/// A pool of two client connections through `bouncer`, each checked for the session, with
/// sqlx's statement cache as `cache` (sqlx's default is 100), no pooling probe.
async fn raw_pool(bouncer: &Pgbouncer, db: &TestDb, cache: usize) -> sqlx::PgPool {
    let opts = PgConnectOptions::from_str(&bouncer.url(db.name()))
        .unwrap_or_else(|e| panic!("{e}"))
        .statement_cache_capacity(cache);
    let session = SessionSettings::default();
    let pool = PgPoolOptions::new()
        .max_connections(2)
        .acquire_timeout(Duration::from_secs(2));
    open_checked(pool, session.apply(opts), &session)
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", bouncer.log()))
}

/// What PgBouncer 1.18's transaction pooling does to sqlx's prepared statements — why the
/// worker refuses it: two client connections, one after the other, each run a statement of their
/// own with an argument. Both name it `sqlx_s_1`, the pooler hands both its server backend (one
/// here; with more, PgBouncer hands out the most recently released first), and the second
/// `Parse` meets the first's statement. The same with sqlx's statement
/// cache off (capacity 0): a persistent query is still prepared under a name.
#[tokio::test]
async fn transaction_pooling_on_pgbouncer_1_18_mixes_up_sqlx_statements() {
    let cluster = cluster();
    let db = database(&cluster).await;
    with_database_settings(&db).await;
    for cache in [100, 0] {
        // A fresh pooler each time (its server backend keeps the statements it was given), with
        // one server connection: every client is handed that one.
        let transaction =
            Pgbouncer::start_sized(cluster.port(), PoolMode::Transaction, IGNORE_OPTIONS, 1)
                .unwrap_or_else(|e| panic!("cannot start pgbouncer: {e}"));
        let pool = raw_pool(&transaction, &db, cache).await;
        let mut a = pool.acquire().await.unwrap_or_else(|e| panic!("{e}"));
        let mut b = pool.acquire().await.unwrap_or_else(|e| panic!("{e}"));
        let first: i32 = sqlx::query_scalar("SELECT $1::int4 + 1")
            .bind(1)
            .fetch_one(&mut *a)
            .await
            .unwrap_or_else(|e| panic!("cache {cache}: {e}"));
        assert_eq!(first, 2);
        let second = sqlx::query_scalar::<_, String>("SELECT $1::text || '!'")
            .bind("b")
            .fetch_one(&mut *b)
            .await;
        eprintln!("statement cache {cache}: the second client's statement: {second:?}");
        let e = second
            .err()
            .unwrap_or_else(|| panic!("cache {cache}: the pooler kept the statements apart"));
        assert!(
            e.to_string()
                .contains("prepared statement \"sqlx_s_1\" already exists"),
            "cache {cache}: {e}"
        );
        drop((a, b));
        pool.close().await;
    }
    db.cleanup().await;
}

async fn run(db: &TestDb, sql: &str) {
    let mut conn = PgConnection::connect(&tasklatch_pg::harness::with_database(
        db.admin_url(),
        db.name(),
    ))
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_owned()))
        .execute(&mut conn)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    let _ = conn.close().await;
}
